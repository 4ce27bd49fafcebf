/* CRC-32 (ISO-HDLC: polynomial 0xEDB88320 reflected, init and final xor 0xFFFFFFFF), the
 * checksum of zlib, gzip and PNG, so a checkpoint's checksum can be verified with
 * Python's zlib.crc32. Folded with carry-less multiplication where the CPU has it (x86-64
 * PCLMULQDQ, checked at run time), else slicing-by-8 (Intel, Kounavis & Berry 2005). */
#ifndef SL_TRAIN_CRC32_H
#define SL_TRAIN_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc over data: start with crc = 0; crc32(a + b) = sl_crc32(sl_crc32(0, a), b). */
uint32_t sl_crc32(uint32_t crc, const void *data, size_t len);

/* The same by slicing-by-8 alone, whatever the CPU: the tests' reference for the folded one. */
uint32_t sl_crc32_portable(uint32_t crc, const void *data, size_t len);

#endif
