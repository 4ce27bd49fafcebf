/* `sailor data`: builds a token file (format in src/train/data.h) from text files with the
 * byte-level tokenizer or GPT-2's BPE, or describes an existing token file (--info). Text is
 * tokenised file by file; for BPE each file is cut into chunks at a newline followed by a
 * non-space character, a place where GPT-2's pre-tokeniser always cuts, so chunking never
 * changes the tokens.
 *
 * --val-fraction F cuts the token stream in two: the last round(F x N) tokens go to the
 * validation file (--val-out, default derived from --output), the rest to --output. One
 * contiguous tail rather than chunks spread through the stream: training windows overlap their
 * neighbours by one token and nearby text is alike (the same document), so a single cut is the
 * one place where the two parts touch, and no token is in both files. Both parts must hold one
 * window of --seq-len + 1 tokens. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/train_args.h"
#include "train/data.h"
#include "train/tokenizer.h"
#include "util/atomic_file.h"
#include "util/limits.h"
#include "util/log.h"

static int run_data(int argc, char **argv);

enum { OPT_OUT, OPT_TOKENIZER, OPT_ENCODER, OPT_MERGES, OPT_INFO, OPT_VAL_FRACTION, OPT_VAL_OUT,
       OPT_SEQ_LEN };

/* --seq-len when not given: gpt2-tiny's (data/models/gpt2-tiny.json) */
#define DEFAULT_SEQ_LEN 128

static const struct sl_cli_option options[] = {
	[OPT_OUT] = {"output", 'o', "FILE", "token file to write", NULL},
	[OPT_TOKENIZER] = {"tokenizer", 0, "byte|gpt2", "byte-level (vocab 256) or GPT-2 BPE",
			   "byte"},
	[OPT_ENCODER] = {"encoder", 0, "FILE", "GPT-2 encoder.json (with --tokenizer gpt2)", NULL},
	[OPT_MERGES] = {"merges", 0, "FILE", "GPT-2 vocab.bpe (with --tokenizer gpt2)", NULL},
	[OPT_INFO] = {"info", 0, NULL, "describe the token files given instead of writing one",
		      NULL},
	[OPT_VAL_FRACTION] = {"val-fraction", 0, "F", "cut the last F (0 < F < 1) of the tokens "
			      "into a validation file", "none"},
	[OPT_VAL_OUT] = {"val-out", 0, "FILE", "the validation file of --val-fraction",
			 "--output, .bin replaced by .val.bin, else .val appended"},
	[OPT_SEQ_LEN] = {"seq-len", 0, "S", "with --val-fraction: the sequence length of training; "
			 "each part must hold one window of S+1 tokens", "128"},
};

/* What the command line asked for. */
struct request {
	const char *out, *tokenizer, *encoder, *merges, *val_out;
	int want_info;
	double val_fraction;        /* 0: no validation file */
	int seq_len;                /* 0: not given */
	char val_default[4200];     /* --val-out derived from --output */
};

const struct sl_cli_command sl_cmd_data = {
	.name = "data",
	.synopsis = "INPUT.txt... -o OUT.bin [--tokenizer byte|gpt2 --encoder encoder.json "
		    "--merges vocab.bpe] [--val-fraction F [--val-out VAL.bin] [--seq-len S]] | "
		    "--info FILE.bin...",
	.summary = "build a token file for 'sailor train' from text",
	.description = "Tokenizes the input files, one after the other, into one token file: a "
		       "32-byte header\n(magic SLTOKENS, version, token width, vocabulary, "
		       "tokenizer, count) and the tokens.\nWith --val-fraction F the last F of the "
		       "tokens go to a validation file with the same\nheader instead (one contiguous "
		       "tail: no token is in both files).",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_data,
};

#define CHUNK_BYTES (1 << 20)

static int read_file(const char *path, char **text, size_t *len, struct sl_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "input '%s': cannot read: %s", path, strerror(errno));
	size_t cap = 1 << 16, used = 0;
	char *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + used, 1, cap - used, f)) > 0) {
		used += n;
		if (used == cap) {
			char *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	int failed = ferror(f);
	fclose(f);
	if (!buf)
		return sl_err_set(err, SL_ENOMEM, "input '%s': out of memory", path);
	if (failed) {
		free(buf);
		return sl_err_set(err, SL_EIO, "input '%s': read error", path);
	}
	*text = buf;
	*len = used;
	return 0;
}

static int is_ascii_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* End of the chunk starting at `from`: just after a '\n' followed by a non-space byte. */
static size_t chunk_end(const char *text, size_t len, size_t from)
{
	if (len - from <= CHUNK_BYTES)
		return len;
	for (size_t i = from + CHUNK_BYTES; i + 1 < len; i++)
		if (text[i] == '\n' && !is_ascii_space(text[i + 1]) &&
		    !((unsigned char)text[i + 1] & 0x80))
			return i + 1;
	return len;
}

/* Describes every file, or, when one of them is bad, prints nothing on stdout and names each
 * bad one on stderr (exit 1): a command that fails leaves stdout empty. */
static int info(int count, char **paths)
{
	static const char *names[] = {"other", "byte", "gpt2"};
	int status = 0;
	char *buf = NULL;
	size_t size = 0;
	FILE *report = open_memstream(&buf, &size);
	if (!report) {
		sl_cli_error(&sl_cmd_data, "out of memory");
		return 1;
	}
	for (int i = 0; i < count; i++) {
		struct sl_token_file f;
		struct sl_err err = {0};
		if (sl_token_file_open(&f, paths[i], &err)) {
			sl_cli_error(&sl_cmd_data, "%s", err.msg);
			status = 1;
			continue;
		}
		fprintf(report, "%s: %lld tokens, %d bytes each, vocabulary %u, tokenizer %s, "
			"largest token %u\n",
			paths[i], f.count, f.width, f.vocab,
			f.tokenizer <= 2 ? names[f.tokenizer] : "unknown", sl_token_file_max(&f));
		sl_token_file_close(&f);
	}
	if (fclose(report) != 0)
		status = 1;
	if (!status)
		fwrite(buf, 1, size, stdout);
	free(buf);
	return status;
}

/* The combinations of options, before any input is read: 0 or 2 after a usage error. */
static int check_request(struct request *q, int inputs)
{
	const struct sl_cli_command *c = &sl_cmd_data;
	if (inputs == 0)
		return sl_cli_usage_error(c, "no input file given");
	if (q->want_info && (q->val_fraction > 0 || q->val_out || q->seq_len))
		return sl_cli_usage_error(c, "--info describes files: --val-fraction, --val-out and "
					  "--seq-len apply to writing one");
	if (q->want_info)
		return 0;
	if (!q->out)
		return sl_cli_usage_error(c, "-o/--output is required");
	if ((q->val_out || q->seq_len) && q->val_fraction <= 0)
		return sl_cli_usage_error(c, "--%s applies with --val-fraction F only",
					  q->val_out ? "val-out" : "seq-len");
	if (q->val_fraction <= 0)
		return 0;
	if (!q->val_out) {
		size_t n = strlen(q->out);
		if (n > 4 && !strcmp(q->out + n - 4, ".bin"))
			snprintf(q->val_default, sizeof(q->val_default), "%.*s.val.bin",
				 (int)(n - 4), q->out);
		else
			snprintf(q->val_default, sizeof(q->val_default), "%s.val", q->out);
		q->val_out = q->val_default;
	}
	if (!strcmp(q->val_out, q->out))
		return sl_cli_usage_error(c, "--val-out '%s' is --output too: name the validation "
					  "file apart", q->val_out);
	return 0;
}

static int load_tokenizer(const struct request *q, struct sl_tokenizer *tok)
{
	struct sl_err err = {0};
	if (!strcmp(q->tokenizer, "byte")) {
		if (q->encoder || q->merges)
			return sl_cli_usage_error(&sl_cmd_data,
						  "--encoder/--merges need --tokenizer gpt2");
		sl_tokenizer_byte_init(tok);
		return 0;
	}
	if (strcmp(q->tokenizer, "gpt2"))
		return sl_cli_usage_error(&sl_cmd_data, "--tokenizer: '%s' is not byte or gpt2",
					  q->tokenizer);
	if (!q->encoder || !q->merges)
		return sl_cli_usage_error(&sl_cmd_data,
					  "--tokenizer gpt2 needs --encoder encoder.json and "
					  "--merges vocab.bpe (GPT-2's vocabulary files)");
	int rc = sl_tokenizer_gpt2_load(tok, q->encoder, q->merges, &err);
	if (rc)
		sl_cli_error(&sl_cmd_data, "%s", err.msg);
	return sl_err_exit_status(rc);
}

/* Writes the tokens: all of them to --output, or, with --val-fraction, the head there and the
 * tail to --val-out. Says what it wrote. */
static int write_outputs(const struct request *q, const struct sl_tokenizer *tok,
			 const struct sl_token_buf *buf, size_t bytes, int inputs,
			 struct sl_err *err)
{
	long long n = buf->count, val = 0;
	int seq = q->seq_len > 0 ? q->seq_len : DEFAULT_SEQ_LEN;
	if (q->val_fraction > 0) {
		val = (long long)(q->val_fraction * (double)n + 0.5);
		long long small = val < n - val ? val : n - val;
		if (n < 2LL * (seq + 1))
			return sl_err_set(err, SL_EINPUT,
					  "the text is too short to split: its %lld tokens make fewer "
					  "than two windows of %d+1 tokens (one for training, one for "
					  "validation); give more text or a smaller --seq-len", n, seq);
		if (small < seq + 1)
			return sl_err_set(err, SL_EINPUT,
					  "--val-fraction %g leaves %lld of the %lld tokens for %s, "
					  "fewer than one window of %d+1 tokens: give a %s "
					  "--val-fraction or a smaller --seq-len",
					  q->val_fraction, small, n,
					  small == val ? "validation" : "training", seq,
					  small == val ? "larger" : "smaller");
		int rc = sl_atomic_check(q->val_out, "token file", err);
		if (rc)
			return rc;
	}
	int rc = sl_token_file_write(q->out, buf->data, n - val, tok->vocab, (uint32_t)tok->id,
				     err);
	if (!rc && val)
		rc = sl_token_file_write(q->val_out, buf->data + (n - val), val, tok->vocab,
					 (uint32_t)tok->id, err);
	if (rc)
		return rc;
	char split[128] = "";
	if (val)
		snprintf(split, sizeof(split), " for training, of %lld tokens", n);
	printf("wrote '%s': %lld tokens%s from %zu bytes in %d file%s (%s tokenizer, vocabulary %u, "
	       "%d-byte tokens)\n", q->out, n - val, split, bytes, inputs, inputs > 1 ? "s" : "",
	       q->tokenizer, tok->vocab, tok->vocab <= 65536 ? 2 : 4);
	if (val)
		printf("wrote '%s': the last %lld tokens (%.4g%%) for validation\n", q->val_out, val,
		       100.0 * (double)val / (double)n);
	return 0;
}

static int run_inputs(int inputs, char **paths, struct request *q)
{
	int status = check_request(q, inputs);
	if (status)
		return status;
	if (q->want_info)
		return info(inputs, paths);
	struct sl_tokenizer tok;
	if ((status = load_tokenizer(q, &tok)))
		return status;
	struct sl_err err = {0};
	struct sl_token_buf buf = {0};
	size_t bytes = 0;
	int rc = 0;
	for (int i = 0; i < inputs && !rc; i++) {
		char *text = NULL;
		size_t len = 0;
		rc = read_file(paths[i], &text, &len, &err);
		for (size_t from = 0; !rc && from < len;) {
			size_t to = chunk_end(text, len, from);
			rc = sl_tokenizer_encode(&tok, text + from, to - from, &buf, &err);
			if (rc)
				sl_err_prefix(&err, "input '%s'", paths[i]);
			from = to;
		}
		bytes += len;
		free(text);
	}
	if (!rc && buf.count == 0)
		rc = sl_err_set(&err, SL_EINPUT, "the input files hold no text: nothing to write");
	if (!rc)
		rc = write_outputs(q, &tok, &buf, bytes, inputs, &err);
	if (rc)
		sl_cli_error(&sl_cmd_data, "%s", err.msg);
	sl_token_buf_free(&buf);
	sl_tokenizer_free(&tok);
	return sl_err_exit_status(rc);
}

/* One option into q: 0, or 2 after a usage error. */
static int take_option(struct request *q, int idx, const char *arg)
{
	const struct sl_cli_command *c = &sl_cmd_data;
	switch (idx) {
	case OPT_OUT: q->out = arg; break;
	case OPT_TOKENIZER: q->tokenizer = arg; break;
	case OPT_ENCODER: q->encoder = arg; break;
	case OPT_MERGES: q->merges = arg; break;
	case OPT_INFO: q->want_info = 1; break;
	case OPT_VAL_OUT: q->val_out = arg; break;
	case OPT_SEQ_LEN:
		return sl_cli_parse_int(c, "seq-len", arg, 1, SL_MAX_SEQ_LEN, &q->seq_len);
	case OPT_VAL_FRACTION:
		if (sl_cli_parse_double(c, "val-fraction", arg, 0.0, 1.0, &q->val_fraction))
			return 2;
		if (q->val_fraction <= 0.0 || q->val_fraction >= 1.0)
			return sl_cli_usage_error(c, "--val-fraction %s: give a fraction strictly "
						  "between 0 and 1 (0.05: the last 5%% of the tokens)",
						  arg);
		break;
	}
	return 0;
}

static int run_data(int argc, char **argv)
{
	struct request q = {.tokenizer = "byte"};
	/* Options may come before and after the input files: parse, take one positional argument,
	 * parse again from there (getopt stops at the first positional one). */
	char **paths = calloc((size_t)argc + 1, sizeof(char *));
	if (!paths)
		return 1;
	int inputs = 0, rest_argc = argc, only_files = 0;
	char **rest = argv;
	while (rest_argc > 1) {
		if (only_files) {
			paths[inputs++] = rest[1];
			rest++, rest_argc--;
			continue;
		}
		struct sl_cli_parser parser;
		sl_cli_parser_init(&parser, &sl_cmd_data, rest_argc, rest);
		for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
			if (idx == SL_CLI_ERROR || idx == SL_CLI_HELP) {
				free(paths);
				return idx == SL_CLI_HELP ? 0 : 2;
			}
			int rc = take_option(&q, idx, parser.arg);
			if (rc) {
				free(paths);
				return rc;
			}
		}
		int next = parser.next_index;
		if (next >= rest_argc)
			break;
		only_files = !strcmp(rest[next - 1], "--");
		paths[inputs++] = rest[next];
		rest += next;
		rest_argc -= next;
	}
	int status = run_inputs(inputs, paths, &q);
	free(paths);
	return status;
}
