/* versions.h — what this herd is built of: its version, the backends
 * built in and the version of every library it links, each as the
 * library reports it at run time (or, for one that cannot say, as herd
 * was built with it), for `herd version`; and the MPI library's line for
 * the results file. Neither needs MPI_Init (MPI_Get_library_version may
 * be called before it). */
#ifndef HERD_VERSIONS_H
#define HERD_VERSIONS_H

#include <stddef.h>
#include <stdio.h>

/* The MPI library's version, its first line ("Open MPI v4.1.4, package:
 * ..."). */
void versions_mpi(char *buf, size_t len);

/* `herd version`: "herd X.Y.Z", the backends, then one line per library. */
void versions_print(FILE *out);

#endif
