/* h5util.h — HDF5 helpers shared by the results writers (results.c for the
 * run and its phases, results_monitor.c for /monitor). Every function that
 * can fail returns -1 (or an invalid hid_t) after writing one line into
 * err; nothing aborts. */
#ifndef HERD_H5UTIL_H
#define HERD_H5UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "results_tables.h"

/* Readers list members and attributes in the order they were written
 * (phases in job order, keys in the key table's order), not alphabetically. */
#define CRT_ORDER (H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED)

/* "what (HDF5's account)" into err; call right after the failing call. */
int h5_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A plain one-line message. Both return -1. */
int h5_msg_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Put "prefix: " in front of the message already in err. */
void h5_msg_prefix(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

hid_t h5_type_fixed_string(size_t len);
hid_t h5_type_var_string(void);
hid_t h5_type_bool(void); /* int8 enum {FALSE, TRUE}: what h5py reads as bool */
/* The two types every attribute writer needs, made once per file. */
struct h5_types {
    hid_t str;     /* variable-length UTF-8 string */
    hid_t boolean; /* h5_type_bool() */
};
/* Memory type: the layout of the table's C record. */
hid_t h5_compound_create(const struct results_table *t);

/* Scalar attributes, replacing any old value. */
int h5_attr_set(hid_t loc, const char *name, hid_t type, const void *buf, char *err, size_t errlen);
int h5_attr_str(hid_t strtype, hid_t loc, const char *name, const char *value, char *err,
                size_t errlen);
int h5_attr_i32(hid_t loc, const char *name, int32_t v, char *err, size_t errlen);
int h5_attr_i64(hid_t loc, const char *name, int64_t v, char *err, size_t errlen);
int h5_attr_u64(hid_t loc, const char *name, uint64_t v, char *err, size_t errlen);
int h5_attr_f64(hid_t loc, const char *name, double v, char *err, size_t errlen);

/* A group that keeps creation order. */
hid_t h5_group_create(hid_t loc, const char *name, char *err, size_t errlen);
/* Create the 1-D dataset name (chunked, shuffle + deflate, unlimited) and
 * write n elements of buf; returns the open dataset. */
hid_t h5_dset_write(hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t elem, size_t n,
                    const void *buf, char *err, size_t errlen);
/* Close a dataset from h5_dset_write: the chunk cache may write only now. */
int h5_dset_close(hid_t d, const char *name, char *err, size_t errlen);
/* The dataset of table t (results_tables.h) under loc: n rows of its C
 * record; the file type is the memory type without padding. */
int h5_table_write(hid_t loc, const struct results_table *t, const void *rows, size_t n, char *err,
                   size_t errlen);
/* h5_table_write of n rows converted one by one from the caller's model:
 * fill(row, i, src) sets row i (zeroed before) from src. The rows live
 * only for the write. */
int h5_table_fill(hid_t loc, const struct results_table *t, size_t n,
                  void (*fill)(void *row, size_t i, const void *src), const void *src, char *err,
                  size_t errlen);
/* The same, appended to the table when it exists already. */
int h5_table_append(hid_t loc, const struct results_table *t, const void *rows, size_t n, char *err,
                    size_t errlen);

/* Refuse (-1) when the file system holding fd's file has less than need bytes
 * free: HDF5 before 1.14.1 cannot recover from a failed metadata write. */
int h5_space_check(int fd, uint64_t need, char *err, size_t errlen);
/* Copy at most srclen bytes of src into dst, NUL-padded, cut before a
 * UTF-8 character if it must be shortened. */
void h5_str_copy(char *dst, size_t dstlen, const char *src, size_t srclen);

#endif
