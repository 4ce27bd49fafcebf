/* Errors as values.
 *
 * Library functions return 0 on success or a negative SL_E* code, and fill an optional
 * struct sl_err with one message in git's style: lowercase, the problem first, the subject
 * quoted, e.g. "profile 'data/profiles/OPT-350/V100-16.json': no entry for mbs 8 tp 1".
 * Only main() turns errors into exit codes. A NULL struct sl_err * is allowed everywhere and
 * means "the caller does not want the message".
 */
#ifndef SL_UTIL_ERR_H
#define SL_UTIL_ERR_H

#include <stddef.h>

enum sl_errcode {
	SL_OK = 0,
	SL_EINPUT = -1,   /* bad user input: a file, a field, a value */
	SL_EIO = -2,      /* the operating system refused a read or write */
	SL_ENOMEM = -3,   /* allocation failed */
	SL_ENOTFOUND = -4,/* a name (model, GPU type, zone, profile entry) is unknown */
	SL_EINFEASIBLE = -5, /* valid input, but nothing satisfies it (no plan fits) */
	SL_EUSAGE = -6,   /* command-line misuse */
	SL_ETIMEOUT = -7, /* a bounded wait (a job, a measurement) ran out of time */
};

#define SL_ERR_MSG_MAX 1024

struct sl_err {
	int code;
	char msg[SL_ERR_MSG_MAX];
};

/* Sets err (if non-NULL) to code and the formatted message; returns code so callers can
 * write `return sl_err_set(err, SL_EINPUT, "...", ...);`. */
int sl_err_set(struct sl_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (used to add the file name on the way up). */
int sl_err_prefix(struct sl_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Exit status for a code: 0 for SL_OK, 2 for SL_EUSAGE, 1 otherwise. */
int sl_err_exit_status(int code);

#endif
