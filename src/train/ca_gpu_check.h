/* ca_gpu_check.h: the debug switch ca_options.check_stages (DLCA_CHECK_STAGES=1). The GPU training step runs stage by
 * stage, each submitted and waited for, and each is compared with the CPU engine in double,
 * so a wrong kernel is pinned to its stage and CA step. Slow; for debugging only. */
#ifndef DLCA_CA_GPU_CHECK_H
#define DLCA_CA_GPU_CHECK_H

#include "ca_train.h"

/* One training step of `trainer` (GPU backend) on round trainer->step, checked stage by stage
 * (one CA step a submission, whatever the plan); *soft_loss and *hard_loss (unless NULL) get the
 * CPU's losses.
 * Returns DLCA_ERR naming the first stage off by more than its tolerance (1e-4 of the largest
 * magnitude for a stage's values, 1e-3 for gradients after several steps of BPTT). */
int ca_gpu_check_step(ca_trainer *trainer, double *soft_loss, double *hard_loss);

#endif
