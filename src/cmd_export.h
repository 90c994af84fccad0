/* cmd_export.h: `dlca export` (src/cmd_export.c); commands.h lists it with the others. */
#ifndef DLCA_CMD_EXPORT_H
#define DLCA_CMD_EXPORT_H

/* argv[0] is "export"; returns the exit status: 0 ok, 1 failed, 2 bad usage. */
int cmd_export(int argc, char **argv);

#endif
