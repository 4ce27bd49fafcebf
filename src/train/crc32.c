/* CRC-32 by slicing-by-8 (crc32.h). The tables are built once, on first use; building them is
 * idempotent, so a race between two first calls writes the same values. */
#include "train/crc32.h"

static uint32_t table[8][256];
static int table_ready;

static void build_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
	table_ready = 1;
}

uint32_t sl_crc32(uint32_t crc, const void *data, size_t len)
{
	if (!table_ready)
		build_tables();
	const unsigned char *p = data;
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			      (uint32_t)p[7] << 24;
		crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^
		      table[5][(lo >> 16) & 0xFF] ^ table[4][lo >> 24] ^ table[3][hi & 0xFF] ^
		      table[2][(hi >> 8) & 0xFF] ^ table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
	return ~crc;
}
