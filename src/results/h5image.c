/* h5image.c — an HDF5 file in memory, saved whole by rename (h5image.h). */
#include "h5image.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5util.h"

#define CORE_INCREMENT (1 << 20) /* the core driver grows its image by this much */

struct h5image {
    hid_t file;
    struct safeout *out;
    unsigned char *buf; /* the image being saved (kept: the next one is rarely smaller) */
    size_t cap;
    size_t len;
    uint64_t saved; /* the size of the last save */
};

struct h5image *h5image_create(hid_t fcpl, struct safeout *out, char *err, size_t errlen)
{
    struct h5image *im = calloc(1, sizeof *im);
    if (im == NULL) {
        h5_msg_fail(err, errlen, "out of memory");
        return NULL;
    }
    im->out = out;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* The name is only HDF5's label for the image: with no backing store
     * nothing is opened or written under it. */
    if (fapl < 0 || H5Pset_fapl_core(fapl, CORE_INCREMENT, 0) < 0)
        h5_fail(err, errlen, "cannot set up an in-memory file");
    else if ((im->file = H5Fcreate("herd-results", H5F_ACC_TRUNC, fcpl, fapl)) < 0)
        h5_fail(err, errlen, "cannot create the results file in memory");
    if (fapl >= 0)
        H5Pclose(fapl);
    if (fapl < 0 || im->file < 0) {
        free(im);
        return NULL;
    }
    return im;
}

hid_t h5image_file(const struct h5image *im)
{
    return im->file;
}

/* The file's current image into im->buf: flushed first, as
 * H5Fget_file_image copies what the driver holds, not HDF5's caches. */
static int h5image_take(struct h5image *im, char *err, size_t errlen)
{
    if (H5Fflush(im->file, H5F_SCOPE_LOCAL) < 0)
        return h5_fail(err, errlen, "cannot flush the file");
    ssize_t n = H5Fget_file_image(im->file, NULL, 0);
    if (n < 0)
        return h5_fail(err, errlen, "cannot take the file's image");
    if ((size_t)n > im->cap) {
        unsigned char *grown = realloc(im->buf, (size_t)n);
        if (grown == NULL)
            return h5_msg_fail(err, errlen, "out of memory for a %zd-byte image", n);
        im->buf = grown;
        im->cap = (size_t)n;
    }
    if (H5Fget_file_image(im->file, im->buf, (size_t)n) != n)
        return h5_fail(err, errlen, "cannot take the file's image");
    im->len = (size_t)n;
    return 0;
}

static void h5image_write(FILE *f, const void *arg)
{
    const struct h5image *im = arg;
    fwrite(im->buf, 1, im->len, f);
}

int h5image_save(struct h5image *im, uint64_t spare, char *err, size_t errlen)
{
    if (h5image_take(im, err, errlen) < 0)
        return -1;
    uint64_t growth = im->len > im->saved ? im->len - im->saved : 0;
    if (h5_space_check(safeout_dirfd(im->out), im->len + growth + spare, err, errlen) < 0)
        return -1;
    char why[512];
    if (safeout_write(im->out, h5image_write, im, why, sizeof why) < 0) {
        /* safeout names the file ("PATH: what"); the caller names it here */
        size_t shown = strlen(im->out->shown);
        bool named = strncmp(why, im->out->shown, shown) == 0 && strncmp(why + shown, ": ", 2) == 0;
        return h5_msg_fail(err, errlen, "%s", named ? why + shown + 2 : why);
    }
    im->saved = im->len;
    return 0;
}

int h5image_close(struct h5image *im, char *err, size_t errlen)
{
    if (im == NULL)
        return 0;
    int rc = 0;
    if (im->file >= 0 && H5Fclose(im->file) < 0)
        rc = h5_fail(err, errlen, "cannot close");
    free(im->buf);
    free(im);
    return rc;
}
