/* One line format on stderr: "sailor: <level>: <message>". Progress lines of training are
 * not logs; they go to stdout from rank 0 (see src/train/). */
#ifndef SL_UTIL_LOG_H
#define SL_UTIL_LOG_H

void sl_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sl_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A fact the user should know once (a default taken), always shown. */
void sl_log_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sl_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Info lines are shown only when verbose is set (SAILOR_VERBOSE=1 or a -v flag). */
void sl_log_set_verbose(int verbose);

#endif
