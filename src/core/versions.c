/* versions.c — herd's version and what it is built of (versions.h). */
#include "versions.h"

#include <mpi.h>
#include <string.h>

#include "backend.h"
#include "job.h"
#include "md5.h"
#include "monitor.h"
#include "results.h"

void versions_mpi(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    MPI_Get_library_version(v, &n);
    v[strcspn(v, "\n")] = '\0';
    snprintf(buf, len, "%s", v);
}

/* One library's line: its name and version, marked when that is the
 * version herd was built with (the library cannot say at run time). */
static void versions_line(FILE *out, const char *library, const char *version, bool at_build)
{
    fprintf(out, "  %-13s %s%s\n", library, version ? version : "?",
            at_build ? " (as herd was built: it reports none at run time)" : "");
}

void versions_print(FILE *out)
{
    fprintf(out, "herd %s\nbackends:", HERD_VERSION);
    for (size_t i = 0; backend_at(i); i++)
        fprintf(out, "%s %s", i ? "," : "", backend_at(i)->name);
    fputs("\nlibraries:\n", out);
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING], hdf5[48];
    versions_mpi(mpi, sizeof mpi);
    versions_line(out, "MPI", mpi, false);
    results_hdf5_version(hdf5, sizeof hdf5);
    versions_line(out, "HDF5", hdf5, false);
    versions_line(out, "zlib", results_zlib_version(), false);
    versions_line(out, "OpenSSL", md5_library_version(), false);
    versions_line(out, "libinih", job_inih_version(), true);
    const char *version, *library;
    for (size_t i = 0; (library = monitor_library_at(i, &version)); i++)
        versions_line(out, library, version, false);
    for (size_t i = 0; backend_at(i); i++) {
        const struct backend_ops *b = backend_at(i);
        if (b->library)
            versions_line(out, b->library, b->version(), b->version_at_build);
    }
}
