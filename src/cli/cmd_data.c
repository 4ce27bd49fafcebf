/* `sailor data`: builds a token file (format in src/train/data.h) from text files with the
 * byte-level tokenizer or GPT-2's BPE, or describes an existing token file (--info). Text is
 * tokenised file by file; for BPE each file is cut into chunks at a newline followed by a
 * non-space character, a place where GPT-2's pre-tokeniser always cuts, so chunking never
 * changes the tokens. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "train/data.h"
#include "train/tokenizer.h"
#include "util/log.h"

static int run_data(int argc, char **argv);

enum { OPT_OUT, OPT_TOKENIZER, OPT_ENCODER, OPT_MERGES, OPT_INFO };

static const struct sl_cli_option options[] = {
	[OPT_OUT] = {"output", 'o', "FILE", "token file to write", NULL},
	[OPT_TOKENIZER] = {"tokenizer", 0, "byte|gpt2", "byte-level (vocab 256) or GPT-2 BPE",
			   "byte"},
	[OPT_ENCODER] = {"encoder", 0, "FILE", "GPT-2 encoder.json (with --tokenizer gpt2)", NULL},
	[OPT_MERGES] = {"merges", 0, "FILE", "GPT-2 vocab.bpe (with --tokenizer gpt2)", NULL},
	[OPT_INFO] = {"info", 0, NULL, "describe the token files given instead of writing one",
		      NULL},
};

const struct sl_cli_command sl_cmd_data = {
	.name = "data",
	.synopsis = "INPUT.txt... -o OUT.bin [--tokenizer byte|gpt2 --encoder encoder.json "
		    "--merges vocab.bpe] | --info FILE.bin...",
	.summary = "build a token file for 'sailor train' from text",
	.description = "Tokenizes the input files, one after the other, into one token file: a "
		       "32-byte header\n(magic SLTOKENS, version, token width, vocabulary, "
		       "tokenizer, count) and the tokens.",
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

static int run_inputs(int inputs, char **paths, const char *out, const char *tokenizer,
		      const char *encoder, const char *merges, int want_info)
{
	if (inputs == 0)
		return sl_cli_usage_error(&sl_cmd_data, "no input file given");
	if (want_info)
		return info(inputs, paths);
	if (!out)
		return sl_cli_usage_error(&sl_cmd_data, "-o/--output is required");
	struct sl_tokenizer tok;
	struct sl_err err = {0};
	if (!strcmp(tokenizer, "byte")) {
		if (encoder || merges)
			return sl_cli_usage_error(&sl_cmd_data,
						  "--encoder/--merges need --tokenizer gpt2");
		sl_tokenizer_byte_init(&tok);
	} else if (!strcmp(tokenizer, "gpt2")) {
		if (!encoder || !merges)
			return sl_cli_usage_error(&sl_cmd_data,
						  "--tokenizer gpt2 needs --encoder encoder.json and "
						  "--merges vocab.bpe (GPT-2's vocabulary files)");
		int rc = sl_tokenizer_gpt2_load(&tok, encoder, merges, &err);
		if (rc) {
			sl_cli_error(&sl_cmd_data, "%s", err.msg);
			return sl_err_exit_status(rc);
		}
	} else {
		return sl_cli_usage_error(&sl_cmd_data, "--tokenizer: '%s' is not byte or gpt2",
					  tokenizer);
	}
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
		rc = sl_token_file_write(out, buf.data, buf.count, tok.vocab, (uint32_t)tok.id, &err);
	if (rc) {
		sl_cli_error(&sl_cmd_data, "%s", err.msg);
	} else {
		printf("wrote '%s': %lld tokens from %zu bytes in %d file%s (%s tokenizer, "
		       "vocabulary %u, %d-byte tokens)\n",
		       out, buf.count, bytes, inputs, inputs > 1 ? "s" : "", tokenizer, tok.vocab,
		       tok.vocab <= 65536 ? 2 : 4);
	}
	sl_token_buf_free(&buf);
	sl_tokenizer_free(&tok);
	return sl_err_exit_status(rc);
}

static int run_data(int argc, char **argv)
{
	const char *out = NULL, *tokenizer = "byte", *encoder = NULL, *merges = NULL;
	int want_info = 0;
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
			switch (idx) {
			case OPT_OUT: out = parser.arg; break;
			case OPT_TOKENIZER: tokenizer = parser.arg; break;
			case OPT_ENCODER: encoder = parser.arg; break;
			case OPT_MERGES: merges = parser.arg; break;
			case OPT_INFO: want_info = 1; break;
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
	int status = run_inputs(inputs, paths, out, tokenizer, encoder, merges, want_info);
	free(paths);
	return status;
}
