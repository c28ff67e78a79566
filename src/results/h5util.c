/* h5util.c — the HDF5 plumbing the results writers share: one-line error
 * messages with HDF5's own account, errno names, string and bool types,
 * compound types from field tables, scalar attributes, groups, and chunked
 * deflated tables written whole or appended to. Nothing here aborts; every
 * failure is one line in the caller's err buffer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strerrorname_np; the build defines it too */
#endif

#include "h5util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "job.h"
#include "utf8.h"

#define H5_DEFLATE_LEVEL 4
#define H5_CHUNK_BYTES (64 * 1024) /* target size of one chunk */

/* ---- messages ---- */

struct h5_detail {
    char outer[160]; /* the API call's own description */
    char inner[352]; /* the deepest one, where the fault was detected */
};

static herr_t detail_walk(unsigned n, const H5E_error2_t *e, void *data)
{
    struct h5_detail *d = data;
    if (e->desc == NULL || e->desc[0] == '\0')
        return 0;
    if (n == 0)
        snprintf(d->outer, sizeof d->outer, "%s", e->desc);
    snprintf(d->inner, sizeof d->inner, "%s", e->desc);
    return 0;
}

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
}

/* Write "what (HDF5's account)" into err. Call it right after the failing
 * HDF5 call: the next HDF5 call clears the error stack. Returns -1. */
int h5_fail(char *err, size_t errlen, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);

    struct h5_detail d = {"", ""};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, detail_walk, &d);
    if (err == NULL || errlen == 0)
        return -1;
    if (d.inner[0] == '\0')
        snprintf(err, errlen, "%s", what);
    else if (strcmp(d.outer, d.inner) == 0)
        snprintf(err, errlen, "%s (%s)", what, d.inner);
    else
        snprintf(err, errlen, "%s (%s: %s)", what, d.outer, d.inner);
    one_line(err);
    return -1;
}

/* Plain message, no HDF5 account. Returns -1. */
int h5_msg_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    one_line(err);
    return -1;
}

/* Put "prefix: " in front of the message already in err. */
void h5_msg_prefix(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    char head[JOB_PATH_MAX + JOB_NAME_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    char *tail = strdup(err);
    if (tail == NULL)
        return;
    snprintf(err, errlen, "%s: %s", head, tail);
    free(tail);
}

/* ---- types ---- */

hid_t h5_type_fixed_string(size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return H5I_INVALID_HID;
    if (H5Tset_size(t, len) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
        H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

hid_t h5_type_var_string(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return H5I_INVALID_HID;
    if (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

hid_t h5_type_bool(void)
{
    hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
    if (t < 0)
        return H5I_INVALID_HID;
    int8_t no = 0, yes = 1;
    if (H5Tenum_insert(t, "FALSE", &no) < 0 || H5Tenum_insert(t, "TRUE", &yes) < 0) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* Memory type: the layout of the table's C record. */
hid_t h5_compound_create(const struct results_table *table)
{
    const struct field *f = table->fields;
    hid_t t = H5Tcreate(H5T_COMPOUND, table->row_size);
    if (t < 0)
        return H5I_INVALID_HID;
    for (size_t i = 0; i < table->nfields; i++) {
        hid_t m;
        switch (f[i].kind) {
        case FIELD_I32:
            m = H5T_NATIVE_INT32;
            break;
        case FIELD_U64:
            m = H5T_NATIVE_UINT64;
            break;
        case FIELD_F64:
            m = H5T_NATIVE_DOUBLE;
            break;
        default:
            m = h5_type_fixed_string(f[i].len);
            break;
        }
        herr_t rc = m < 0 ? -1 : H5Tinsert(t, f[i].name, f[i].offset, m);
        if (f[i].kind == FIELD_STR && m >= 0)
            H5Tclose(m);
        if (rc < 0) {
            H5Tclose(t);
            return H5I_INVALID_HID;
        }
    }
    return t;
}

/* ---- attributes ---- */

/* Set attribute name on loc (scalar, of type), replacing any old value. */
int h5_attr_set(hid_t loc, const char *name, hid_t type, const void *buf, char *err, size_t errlen)
{
    htri_t exists = H5Aexists(loc, name);
    if (exists < 0)
        return h5_fail(err, errlen, "cannot look up attribute '%s'", name);
    if (exists > 0) {
        hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
        if (a < 0)
            return h5_fail(err, errlen, "cannot open attribute '%s'", name);
        herr_t rc = H5Awrite(a, type, buf);
        if (rc < 0)
            h5_fail(err, errlen, "cannot write attribute '%s'", name);
        H5Aclose(a);
        return rc < 0 ? -1 : 0;
    }
    hid_t space = H5Screate(H5S_SCALAR);
    if (space < 0)
        return h5_fail(err, errlen, "cannot create attribute '%s'", name);
    hid_t a = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    int rc = 0;
    if (a < 0)
        rc = h5_fail(err, errlen, "cannot create attribute '%s'", name);
    else if (H5Awrite(a, type, buf) < 0)
        rc = h5_fail(err, errlen, "cannot write attribute '%s'", name);
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(space);
    return rc;
}

int h5_attr_str(hid_t strtype, hid_t loc, const char *name, const char *value, char *err,
                size_t errlen)
{
    const char *v = value != NULL ? value : "";
    return h5_attr_set(loc, name, strtype, &v, err, errlen);
}

int h5_attr_i32(hid_t loc, const char *name, int32_t v, char *err, size_t errlen)
{
    return h5_attr_set(loc, name, H5T_NATIVE_INT32, &v, err, errlen);
}

int h5_attr_i64(hid_t loc, const char *name, int64_t v, char *err, size_t errlen)
{
    return h5_attr_set(loc, name, H5T_NATIVE_INT64, &v, err, errlen);
}

int h5_attr_u64(hid_t loc, const char *name, uint64_t v, char *err, size_t errlen)
{
    return h5_attr_set(loc, name, H5T_NATIVE_UINT64, &v, err, errlen);
}

int h5_attr_f64(hid_t loc, const char *name, double v, char *err, size_t errlen)
{
    return h5_attr_set(loc, name, H5T_NATIVE_DOUBLE, &v, err, errlen);
}

/* ---- groups and datasets ---- */
hid_t h5_group_create(hid_t loc, const char *name, char *err, size_t errlen)
{
    hid_t g = H5I_INVALID_HID;
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    if (gcpl < 0 || H5Pset_link_creation_order(gcpl, CRT_ORDER) < 0 ||
        H5Pset_attr_creation_order(gcpl, CRT_ORDER) < 0)
        h5_fail(err, errlen, "cannot set up group '%s'", name);
    else if ((g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT)) < 0)
        h5_fail(err, errlen, "cannot create group '%s'", name);
    if (gcpl >= 0)
        H5Pclose(gcpl);
    return g;
}

/* Create the 1-D dataset name (n elements of ftype, chunked, shuffle +
 * deflate, unlimited so it may be empty or grow) and write buf (n elements
 * of mtype, elem bytes each) into it. Returns the open dataset or -1. */
hid_t h5_dset_write(hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t elem, size_t n,
                    const void *buf, char *err, size_t errlen)
{
    hsize_t dims[1] = {n}, maxdims[1] = {H5S_UNLIMITED};
    hsize_t chunk[1] = {H5_CHUNK_BYTES / (elem > 0 ? elem : 1)};
    if (chunk[0] == 0)
        chunk[0] = 1;
    if (n > 0 && n < chunk[0])
        chunk[0] = n;

    hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID, d = H5I_INVALID_HID;
    space = H5Screate_simple(1, dims, maxdims);
    if (space < 0) {
        h5_fail(err, errlen, "cannot create dataspace for '%s'", name);
        goto out;
    }
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl < 0 || H5Pset_chunk(dcpl, 1, chunk) < 0 || H5Pset_shuffle(dcpl) < 0 ||
        H5Pset_deflate(dcpl, H5_DEFLATE_LEVEL) < 0 ||
        H5Pset_attr_creation_order(dcpl, CRT_ORDER) < 0) {
        h5_fail(err, errlen, "cannot set up chunking and deflate for '%s'", name);
        goto out;
    }
    d = H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0) {
        h5_fail(err, errlen, "cannot create dataset '%s'", name);
        goto out;
    }
    if (n > 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        h5_fail(err, errlen, "cannot write dataset '%s'", name);
        H5Dclose(d);
        d = H5I_INVALID_HID;
    }
out:
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    return d;
}

/* Close a dataset written by dset_write: the chunk cache may write the
 * data only now, so a failure here is a write failure. */
int h5_dset_close(hid_t d, const char *name, char *err, size_t errlen)
{
    if (H5Dclose(d) < 0)
        return h5_fail(err, errlen, "cannot write dataset '%s'", name);
    return 0;
}

/* Write n rows of the table's C record as a compound dataset; the file
 * type is the memory type without padding. */
int h5_table_write(hid_t loc, const struct results_table *t, const void *rows, size_t n, char *err,
                   size_t errlen)
{
    const char *name = results_table_name(t);
    hid_t mtype = h5_compound_create(t);
    if (mtype < 0)
        return h5_fail(err, errlen, "cannot build the type of '%s'", name);
    hid_t ftype = H5Tcopy(mtype);
    if (ftype < 0 || H5Tpack(ftype) < 0) {
        h5_fail(err, errlen, "cannot build the type of '%s'", name);
        if (ftype >= 0)
            H5Tclose(ftype);
        H5Tclose(mtype);
        return -1;
    }
    hid_t d = h5_dset_write(loc, name, ftype, mtype, t->row_size, n, rows, err, errlen);
    int rc = d < 0 ? -1 : h5_dset_close(d, name, err, errlen);
    H5Tclose(ftype);
    H5Tclose(mtype);
    return rc;
}

int h5_table_fill(hid_t loc, const struct results_table *t, size_t n,
                  void (*fill)(void *row, size_t i, const void *src), const void *src, char *err,
                  size_t errlen)
{
    unsigned char *rows = calloc(n > 0 ? n : 1, t->row_size);
    if (rows == NULL)
        return h5_msg_fail(err, errlen, "out of memory for the %s table", results_table_name(t));
    for (size_t i = 0; i < n; i++)
        fill(rows + i * t->row_size, i, src);
    int rc = h5_table_write(loc, t, rows, n, err, errlen);
    free(rows);
    return rc;
}

/* HDF5 before 1.14.1 cannot close a file after a failed metadata write:
 * the close fails and the library crashes when it shuts down (at exit or in
 * MPI_Finalize). A full disk, the likely cause, is therefore caught before
 * writing: refuse when the file system holding fd's file has less than need
 * bytes free. Quotas are not seen here; an unknown answer lets the write go. */
int h5_space_check(int fd, uint64_t need, char *err, size_t errlen)
{
    struct statvfs st;
    if (fstatvfs(fd, &st) != 0)
        return 0;
    uint64_t avail = (uint64_t)st.f_bavail * (uint64_t)st.f_frsize;
    if (avail >= need)
        return 0;
    return h5_msg_fail(err, errlen,
                       "not written: %llu KiB free on its file system, %llu KiB needed",
                       (unsigned long long)(avail >> 10), (unsigned long long)(need >> 10));
}

/* Copy the C string src (at most srclen bytes) into dst, NUL-padded,
 * shortened to fit if need be. */
void h5_str_copy(char *dst, size_t dstlen, const char *src, size_t srclen)
{
    memset(dst, 0, dstlen);
    if (src == NULL)
        return;
    size_t n = strnlen(src, srclen);
    if (n >= dstlen)
        n = utf8_cut(src, dstlen - 1); /* before a UTF-8 character, not inside it */
    memcpy(dst, src, n);
}

/* Append n rows to the table name under loc, creating it (chunked,
 * deflated, unlimited) on first use. */
int h5_table_append(hid_t loc, const struct results_table *t, const void *rows, size_t n, char *err,
                    size_t errlen)
{
    const char *name = results_table_name(t);
    htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
    if (exists < 0)
        return h5_fail(err, errlen, "cannot look up '%s'", name);
    if (exists == 0)
        return h5_table_write(loc, t, rows, n, err, errlen);
    if (n == 0)
        return 0;
    hid_t mtype = h5_compound_create(t);
    if (mtype < 0)
        return h5_fail(err, errlen, "cannot build the type of '%s'", name);
    int rc = -1;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT), fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    hsize_t old[1], grown[1], count[1] = {n};
    if (d < 0) {
        h5_fail(err, errlen, "cannot open '%s'", name);
        goto out;
    }
    fspace = H5Dget_space(d);
    if (fspace < 0 || H5Sget_simple_extent_dims(fspace, old, NULL) != 1) {
        h5_fail(err, errlen, "'%s' is not a table", name);
        goto out;
    }
    H5Sclose(fspace);
    grown[0] = old[0] + n;
    if (H5Dset_extent(d, grown) < 0 || (fspace = H5Dget_space(d)) < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, old, NULL, count, NULL) < 0 ||
        (mspace = H5Screate_simple(1, count, NULL)) < 0 ||
        H5Dwrite(d, mtype, mspace, fspace, H5P_DEFAULT, rows) < 0) {
        h5_fail(err, errlen, "cannot append to '%s'", name);
        goto out;
    }
    rc = 0;
out:
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    if (d >= 0 && H5Dclose(d) < 0 && rc == 0)
        rc = h5_fail(err, errlen, "cannot write '%s'", name);
    H5Tclose(mtype);
    return rc;
}
