/* GPT-2 byte-level BPE (tokenizer.h), following OpenAI's gpt-2/src/encoder.py:
 *  1. pre-tokenisation with the regex
 *       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *     matched by hand on code points (pretoken_end below). \s is Python's Unicode whitespace
 *     (listed in is_space); \p{L} is glibc's iswalpha in the C.UTF-8 locale, \p{N} ASCII digits
 *     plus what that locale calls alphanumeric but not alphabetic. glibc files some non-ASCII
 *     digits under "alpha", so such digits group with letters here where the regex would split
 *     them; ASCII text is tokenised exactly. Bytes that are not valid UTF-8 are single symbols
 *     of the "other" class.
 *  2. each piece's bytes are mapped to printable code points (bytes_to_unicode), then merged
 *     pair by pair, always the adjacent pair whose merge comes first in vocab.bpe, every
 *     occurrence left to right, until no pair is in the merge list;
 *  3. each resulting symbol is looked up in encoder.json.
 * Invariant: a symbol is always a contiguous substring of the piece's mapped string, so symbols
 * are kept as (offset, length) pairs and merging two is extending the first. */
#include "train/tokenizer.h"

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include <jansson.h>

#include "util/json.h"
#include "util/limits.h"

/* --- string -> int map, open addressing --- */

struct map_entry {
	char *key;     /* NULL: empty slot */
	size_t len;
	int value;
};

struct str_map {
	struct map_entry *slots;
	size_t cap, count; /* cap a power of two */
};

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int map_init(struct str_map *m, size_t expected)
{
	m->cap = 64;
	while (m->cap < 2 * expected)
		m->cap *= 2;
	m->count = 0;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	return m->slots ? 0 : SL_ENOMEM;
}

static void map_free(struct str_map *m)
{
	for (size_t i = 0; m->slots && i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	m->slots = NULL;
}

static struct map_entry *map_slot(const struct str_map *m, const char *key, size_t len)
{
	size_t i = hash_bytes(key, len) & (m->cap - 1);
	for (;;) {
		struct map_entry *e = &m->slots[i];
		if (!e->key || (e->len == len && !memcmp(e->key, key, len)))
			return e;
		i = (i + 1) & (m->cap - 1);
	}
}

static int map_get(const struct str_map *m, const char *key, size_t len)
{
	const struct map_entry *e = map_slot(m, key, len);
	return e->key ? e->value : -1;
}

/* Returns 1 if the key was already present (value unchanged), 0 if added, < 0 on error. */
static int map_put(struct str_map *m, const char *key, size_t len, int value)
{
	struct map_entry *e = map_slot(m, key, len);
	if (e->key)
		return 1;
	if (2 * (m->count + 1) > m->cap)
		return SL_ENOMEM; /* sized at init from the file; never grows */
	e->key = malloc(len + 1);
	if (!e->key)
		return SL_ENOMEM;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->len = len;
	e->value = value;
	m->count++;
	return 0;
}

/* --- the tokenizer --- */

struct sl_bpe {
	struct str_map encoder;   /* token string -> id */
	struct str_map merges;    /* "a b" -> rank */
	char **decoder;           /* id -> token string (owned), vocab entries, NULL for gaps */
	uint32_t vocab;
	char byte_utf8[256][3];   /* mapped code point of each byte, UTF-8, length in byte_len */
	int byte_len[256];
	int cp_byte[324];         /* mapped code point -> byte, -1 if none */
	locale_t utf8;            /* C.UTF-8 for letter classes, or (locale_t)0 */
};

/* bytes_to_unicode() of encoder.py: printable Latin-1 bytes map to themselves, the rest to
 * 256, 257, ... in byte order. */
static void init_byte_map(struct sl_bpe *bpe)
{
	int n = 0;
	for (int i = 0; i < 324; i++)
		bpe->cp_byte[i] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
				(b >= 0xAE && b <= 0xFF);
		int cp = printable ? b : 256 + n++;
		bpe->cp_byte[cp] = b;
		if (cp < 0x80) {
			bpe->byte_utf8[b][0] = (char)cp;
			bpe->byte_len[b] = 1;
		} else {
			bpe->byte_utf8[b][0] = (char)(0xC0 | (cp >> 6));
			bpe->byte_utf8[b][1] = (char)(0x80 | (cp & 0x3F));
			bpe->byte_len[b] = 2;
		}
	}
}

void sl_bpe_free(struct sl_bpe *bpe)
{
	if (!bpe)
		return;
	map_free(&bpe->encoder);
	map_free(&bpe->merges);
	if (bpe->decoder)
		for (uint32_t i = 0; i < bpe->vocab; i++)
			free(bpe->decoder[i]);
	free(bpe->decoder);
	if (bpe->utf8)
		freelocale(bpe->utf8);
	free(bpe);
}

static int load_encoder(struct sl_bpe *bpe, const char *path, struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "encoder.json", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = 0;
	if (!json_is_object(root) || json_object_size(root) == 0) {
		rc = sl_err_set(err, SL_EINPUT,
				"encoder.json '%s': expected an object mapping token strings to ids",
				path);
		goto out;
	}
	long long max_id = -1;
	const char *key;
	json_t *value;
	json_object_foreach(root, key, value) {
		if (!json_is_integer(value) || json_integer_value(value) < 0 ||
		    json_integer_value(value) >= (1LL << 31)) {
			rc = sl_err_set(err, SL_EINPUT,
					"encoder.json '%s': token '%s': id must be a non-negative "
					"integer",
					path, key);
			goto out;
		}
		if (json_integer_value(value) > max_id)
			max_id = json_integer_value(value);
	}
	/* ids are dense, 0..N-1 for N tokens (as GPT-2's are): together with the check for ids
	 * used twice below, no id is missing, and the decoder table is as long as the file */
	if (json_object_size(root) > SL_MAX_BPE_VOCAB || max_id >= (long long)json_object_size(root)) {
		rc = sl_err_set(err, SL_EINPUT,
				"encoder.json '%s': id %lld for %zu tokens: ids must be 0 to %zu, each "
				"used once (at most %d tokens)", path, max_id, json_object_size(root),
				json_object_size(root) - 1, SL_MAX_BPE_VOCAB);
		goto out;
	}
	bpe->vocab = (uint32_t)(max_id + 1);
	bpe->decoder = calloc(bpe->vocab, sizeof(char *));
	if (!bpe->decoder || map_init(&bpe->encoder, json_object_size(root))) {
		rc = sl_err_set(err, SL_ENOMEM, "encoder.json '%s': out of memory", path);
		goto out;
	}
	json_object_foreach(root, key, value) {
		long long id = json_integer_value(value);
		if (bpe->decoder[id]) {
			rc = sl_err_set(err, SL_EINPUT,
					"encoder.json '%s': id %lld is used by both '%s' and '%s'", path,
					id, bpe->decoder[id], key);
			goto out;
		}
		bpe->decoder[id] = strdup(key);
		if (!bpe->decoder[id] || map_put(&bpe->encoder, key, strlen(key), (int)id) < 0) {
			rc = sl_err_set(err, SL_ENOMEM, "encoder.json '%s': out of memory", path);
			goto out;
		}
	}
out:
	json_decref(root);
	return rc;
}

static int load_merges(struct sl_bpe *bpe, const char *path, struct sl_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "vocab.bpe '%s': cannot read: %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	size_t lines = 0;
	while ((n = getline(&line, &cap, f)) >= 0)
		lines++;
	rewind(f);
	if (lines > SL_MAX_BPE_MERGES) {
		free(line);
		fclose(f);
		return sl_err_set(err, SL_EINPUT, "vocab.bpe '%s': %zu lines, more than %d merges",
				  path, lines, SL_MAX_BPE_MERGES);
	}
	int rc = map_init(&bpe->merges, lines) ? sl_err_set(err, SL_ENOMEM, "out of memory") : 0;
	int lineno = 0, rank = 0;
	while (!rc && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || (lineno == 1 && !strncmp(line, "#version", 8)))
			continue;
		char *space = strchr(line, ' ');
		if (!space || space == line || space[1] == '\0' || strchr(space + 1, ' ')) {
			rc = sl_err_set(err, SL_EINPUT,
					"vocab.bpe '%s': line %d: expected two symbols separated by one "
					"space, got '%s'",
					path, lineno, line);
			break;
		}
		int put = map_put(&bpe->merges, line, (size_t)n, rank++);
		if (put < 0)
			rc = sl_err_set(err, SL_ENOMEM, "vocab.bpe '%s': out of memory", path);
	}
	free(line);
	fclose(f);
	return rc;
}

int sl_tokenizer_gpt2_load(struct sl_tokenizer *t, const char *encoder_json_path,
			   const char *vocab_bpe_path, struct sl_err *err)
{
	memset(t, 0, sizeof(*t));
	struct sl_bpe *bpe = calloc(1, sizeof(*bpe));
	if (!bpe)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	init_byte_map(bpe);
	bpe->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	int rc = load_encoder(bpe, encoder_json_path, err);
	if (!rc)
		rc = load_merges(bpe, vocab_bpe_path, err);
	if (rc) {
		sl_bpe_free(bpe);
		return rc;
	}
	t->id = SL_TOKENIZER_GPT2;
	t->vocab = bpe->vocab;
	t->bpe = bpe;
	return 0;
}

/* --- pre-tokenisation --- */

enum cp_class { CLS_SPACE, CLS_LETTER, CLS_NUMBER, CLS_OTHER };

/* Python's \s for str patterns (Unicode White_Space plus the ASCII separators 0x1C-0x1F). */
static int is_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202F || c == 0x205F || c == 0x3000;
}

static enum cp_class classify(const struct sl_bpe *bpe, uint32_t c, int valid)
{
	if (!valid)
		return CLS_OTHER;
	if (is_space(c))
		return CLS_SPACE;
	if (c < 0x80)
		return isalpha((int)c) ? CLS_LETTER : (isdigit((int)c) ? CLS_NUMBER : CLS_OTHER);
	if (!bpe->utf8)
		return CLS_LETTER;
	if (iswalpha_l((wint_t)c, bpe->utf8))
		return CLS_LETTER;
	if (iswalnum_l((wint_t)c, bpe->utf8))
		return CLS_NUMBER;
	return CLS_OTHER;
}

/* Decodes the code point at s[i]; returns its byte length (1 for an invalid byte, *valid 0). */
static size_t utf8_next(const unsigned char *s, size_t len, size_t i, uint32_t *cp, int *valid)
{
	unsigned char c = s[i];
	size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
	*valid = 0;
	*cp = c;
	if (n == 0 || i + n > len)
		return 1;
	uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
	for (size_t k = 1; k < n; k++) {
		if ((s[i + k] & 0xC0) != 0x80)
			return 1;
		v = (v << 6) | (s[i + k] & 0x3Fu);
	}
	static const uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (v < min_for_len[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 1;
	*cp = v;
	*valid = 1;
	return n;
}

struct cp_info {
	size_t offset;   /* byte offset of the code point */
	uint32_t cp;
	enum cp_class cls;
};

/* End index (in code points) of the piece that starts at code point i (regex in the header). */
static size_t pretoken_end(const struct cp_info *c, size_t n, size_t i)
{
	if (c[i].cp == '\'' && i + 1 < n) {
		uint32_t a = c[i + 1].cp, b = i + 2 < n ? c[i + 2].cp : 0;
		if (a == 's' || a == 't' || a == 'm' || a == 'd')
			return i + 2;
		if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
			return i + 3;
	}
	size_t j = i;
	if (c[i].cp == ' ' && i + 1 < n && c[i + 1].cls != CLS_SPACE)
		j = i + 1;
	enum cp_class cls = c[j].cls;
	if (cls != CLS_SPACE) {
		size_t k = j + 1;
		while (k < n && c[k].cls == cls)
			k++;
		return k;
	}
	size_t k = i + 1;
	while (k < n && c[k].cls == CLS_SPACE)
		k++;
	if (k == n || k - i == 1)
		return k;
	return k - 1; /* leave the last space to start the next word */
}

/* --- merging --- */

struct symbol {
	size_t start, len;
};

/* Rank of the merge of symbols a and b of the mapped string, or -1. */
static int pair_rank(const struct sl_bpe *bpe, const char *mapped, struct symbol a,
		     struct symbol b, char *key)
{
	memcpy(key, mapped + a.start, a.len);
	key[a.len] = ' ';
	memcpy(key + a.len + 1, mapped + b.start, b.len);
	return map_get(&bpe->merges, key, a.len + 1 + b.len);
}

static int bpe_piece(const struct sl_bpe *bpe, const unsigned char *bytes, size_t len,
		     char *mapped, struct symbol *sym, char *key, struct sl_token_buf *out,
		     struct sl_err *err)
{
	size_t m = 0, count = 0;
	for (size_t i = 0; i < len; i++) {
		int bl = bpe->byte_len[bytes[i]];
		memcpy(mapped + m, bpe->byte_utf8[bytes[i]], (size_t)bl);
		sym[count++] = (struct symbol){m, (size_t)bl};
		m += (size_t)bl;
	}
	while (count > 1) {
		int best = -1;
		size_t best_at = 0;
		for (size_t i = 0; i + 1 < count; i++) {
			int r = pair_rank(bpe, mapped, sym[i], sym[i + 1], key);
			if (r >= 0 && (best < 0 || r < best)) {
				best = r;
				best_at = i;
			}
		}
		if (best < 0)
			break;
		/* merge every occurrence of this pair, left to right, without overlaps */
		struct symbol a = sym[best_at], b = sym[best_at + 1];
		size_t w = 0;
		for (size_t i = 0; i < count; i++) {
			if (i + 1 < count && sym[i].len == a.len && sym[i + 1].len == b.len &&
			    !memcmp(mapped + sym[i].start, mapped + a.start, a.len) &&
			    !memcmp(mapped + sym[i + 1].start, mapped + b.start, b.len)) {
				sym[w++] = (struct symbol){sym[i].start, a.len + b.len};
				i++;
			} else {
				sym[w++] = sym[i];
			}
		}
		count = w;
	}
	for (size_t i = 0; i < count; i++) {
		int id = map_get(&bpe->encoder, mapped + sym[i].start, sym[i].len);
		if (id < 0)
			return sl_err_set(err, SL_EINPUT,
					  "symbol '%.*s' is not in encoder.json: the vocabulary does "
					  "not match its merges",
					  (int)sym[i].len, mapped + sym[i].start);
		int rc = sl_token_buf_push(out, (uint32_t)id, err);
		if (rc)
			return rc;
	}
	return 0;
}

int sl_bpe_encode(const struct sl_bpe *bpe, const char *text, size_t len,
		  struct sl_token_buf *out, struct sl_err *err)
{
	const unsigned char *s = (const unsigned char *)text;
	struct cp_info *cps = malloc((len + 1) * sizeof(*cps));
	char *mapped = malloc(2 * len + 1);
	struct symbol *sym = malloc((len + 1) * sizeof(*sym));
	char *key = malloc(4 * len + 2);
	int rc = 0;
	if (!cps || !mapped || !sym || !key) {
		rc = sl_err_set(err, SL_ENOMEM, "cannot allocate buffers for %zu bytes of text", len);
		goto out;
	}
	size_t n = 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int valid;
		size_t step = utf8_next(s, len, i, &cp, &valid);
		cps[n++] = (struct cp_info){i, cp, classify(bpe, cp, valid)};
		i += step;
	}
	cps[n].offset = len;
	for (size_t i = 0; i < n && !rc;) {
		size_t end = pretoken_end(cps, n, i);
		rc = bpe_piece(bpe, s + cps[i].offset, cps[end].offset - cps[i].offset, mapped, sym,
			       key, out, err);
		i = end;
	}
out:
	free(cps);
	free(mapped);
	free(sym);
	free(key);
	return rc;
}

int sl_bpe_decode(const struct sl_bpe *bpe, const uint32_t *tokens, long long n, char **text,
		  size_t *len, struct sl_err *err)
{
	size_t cap = 64, used = 0;
	char *s = malloc(cap);
	if (!s)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	for (long long i = 0; i < n; i++) {
		if (tokens[i] >= bpe->vocab || !bpe->decoder[tokens[i]]) {
			free(s);
			return sl_err_set(err, SL_EINPUT, "token %u at position %lld is not in the "
					  "vocabulary", tokens[i], i);
		}
		const unsigned char *tok = (const unsigned char *)bpe->decoder[tokens[i]];
		size_t tl = strlen((const char *)tok);
		for (size_t j = 0; j < tl;) {
			uint32_t cp;
			int valid;
			j += utf8_next(tok, tl, j, &cp, &valid);
			if (!valid || cp >= 324 || bpe->cp_byte[cp] < 0) {
				free(s);
				return sl_err_set(err, SL_EINPUT,
						  "token %u ('%s') has a character outside GPT-2's "
						  "byte alphabet",
						  tokens[i], (const char *)tok);
			}
			if (used + 2 > cap) {
				char *grown = realloc(s, cap * 2);
				if (!grown) {
					free(s);
					return sl_err_set(err, SL_ENOMEM, "out of memory");
				}
				s = grown;
				cap *= 2;
			}
			s[used++] = (char)bpe->cp_byte[cp];
		}
	}
	s[used] = '\0';
	*text = s;
	*len = used;
	return 0;
}
