/* h5image.h — an HDF5 file that lives in memory (HDF5's core driver) and
 * is saved whole, by the safe-output rule (safeout.h): each save writes
 * the file's image under a new private name, fsyncs it and renames it over
 * the last saved one. HDF5 updates a file in place and in no safe order,
 * so a process killed while HDF5 writes to disk can leave a file no reader
 * opens; a file that is only ever replaced by rename is, at every instant
 * and after a crash of the host, the whole of its last save.
 *
 * What it costs: each save writes the whole file (the results files of
 * herd's runs are tens of KiB a phase) and needs that much free space
 * beside the last save until the rename.
 *
 * Every function that can fail returns -1 (or an invalid hid_t) after
 * writing one line into err; nothing aborts. */
#ifndef HERD_H5IMAGE_H
#define HERD_H5IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "safeout.h"

struct h5image;

/* A new, empty HDF5 file in memory (file creation properties fcpl), to be
 * saved to the output out (prepared: safeout_prepare; kept by the caller
 * until h5image_close). Nothing is written to disk before the first save. */
struct h5image *h5image_create(hid_t fcpl, struct safeout *out, char *err, size_t errlen);

/* The open HDF5 file. */
hid_t h5image_file(const struct h5image *im);

/* Flush the file and save it. The first save puts the file under the
 * output's name (safeout_commit: never over anything herd did not make,
 * an earlier file only with force); each later one replaces the file the
 * last save put there, and only it. Needs, free on the output's file
 * system, the image's size, its growth since the last save and spare (what
 * the caller keeps free for later saves); without it nothing is written.
 * On failure the file on disk is the last save, untouched. */
int h5image_save(struct h5image *im, uint64_t spare, char *err, size_t errlen);

/* Close the HDF5 file (unsaved changes are dropped) and free im. */
int h5image_close(struct h5image *im, char *err, size_t errlen);

#endif
