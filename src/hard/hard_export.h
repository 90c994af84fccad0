/* hard_export.h: a pruned hard circuit as source another tool can use.
 *   c:       a standalone C99 file with dlca_step(), which advances a bit-packed grid one step
 *            (64 cells per uint64_t, the layout of hard_cpu.h), boundary and async fire mask
 *            included; its header comment documents the signature.
 *   verilog: a combinational module dlca_cell for one cell's update: in[9C] -> out[C], with
 *            in[c*9 + (dy+1)*3 + (dx+1)] = channel c of the neighbour at (dy, dx).
 *   dot:     Graphviz of the circuit (inputs, gates by op, outputs). */
#ifndef DLCA_HARD_EXPORT_H
#define DLCA_HARD_EXPORT_H

#include "ca_config.h"
#include "hard_circuit.h"

#include <stdio.h>

typedef enum { HARD_EXPORT_C, HARD_EXPORT_VERILOG, HARD_EXPORT_DOT } hard_export_format;

/* "c", "verilog" or "dot"; the error lists them. */
int hard_export_format_parse(const char *name, hard_export_format *format);

/* What the generated file's header says and bakes in: the model's config (boundary, fire rate,
 * preset), where it came from, and the pruning stats (may be NULL). */
typedef struct {
    const ca_config *config;
    const char *source; /* the model file's name, for the header comment */
    const hard_stats *stats;
} hard_export_info;

/* Writes `net` in `format` to `out`. */
int hard_export_write(FILE *out, const hard_netlist *net, hard_export_format format, const hard_export_info *info);

/* hard_export_write into `path` atomically: a temp file beside it, fsync'd and renamed over it,
 * so `path` is either the old file or the complete new one. */
int hard_export_file(const char *path, const hard_netlist *net, hard_export_format format, const hard_export_info *info);

#endif
