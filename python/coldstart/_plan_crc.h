/*
 * The checksum of the code archive's parts (docs/plan.md, "The code
 * archive"), part of the _plancode extension (_plancode.c includes it
 * once): crc32c(data) is the CRC-32C (Castagnoli, the polynomial iSCSI and
 * ext4 use, reflected 0x82F63B78, initial value and final xor 0xFFFFFFFF)
 * of a bytes-like object.  On x86-64 CPUs with SSE 4.2 it runs on the crc32
 * instruction (8 bytes per instruction, three streams at once); elsewhere,
 * chosen at run time, on tables (eight bytes per step).  Both give the same
 * answer for every input; crc32c_table() is the table path alone (for
 * tests) and crc32c_hw() says which one crc32c() uses.
 *
 * Applying a plan, every archive part is checked before it is unmarshalled;
 * zlib's crc32 did that at about 2.3 instructions per byte (a pandas
 * program's 13.4 MB of code: 31 M instructions), the crc32 instruction's
 * path at 0.18 (2.4 M).  coldstart plan records both checksums of each part, so a
 * plan applied without this extension is still checked (zlib's).
 */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC_X86 1
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u

/*
 * The tables are filled at their first use; interpreters with a GIL of
 * their own (3.12+) may do so at once, each writing the same values, and
 * read them only once the flag says they are whole.
 */
static struct {
	uint32_t table[8][256]; /* table[k][b]: b's byte followed by k zero bytes */
	int have_table;
	int hw; /* 1 the crc32 instruction, 0 tables, -1 not chosen yet */
	/*
	 * The three-stream hardware path: shift[k][b] is the CRC state b << 8k
	 * after CRC_LANE zero bytes, to move a stream's state past the next
	 * streams' bytes.
	 */
	uint32_t shift[4][256];
	int have_shift;
} C = { .hw = -1 };

/* The bytes a hardware stream covers before the three are joined. */
#define CRC_LANE 4096

static void crc_tables(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t c = b;

		for (int i = 0; i < 8; i++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		C.table[0][b] = c;
	}
	for (int k = 1; k < 8; k++)
		for (int b = 0; b < 256; b++)
			C.table[k][b] = (C.table[k - 1][b] >> 8) ^ C.table[0][C.table[k - 1][b] & 0xff];
	__atomic_store_n(&C.have_table, 1, __ATOMIC_RELEASE);
}

/* The CRC state crc (no inversion) over n bytes at p, on tables. */
static uint32_t crc_run_table(uint32_t crc, const unsigned char *p, size_t n)
{
	if (!__atomic_load_n(&C.have_table, __ATOMIC_ACQUIRE))
		crc_tables();
	while (n && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ C.table[0][(crc ^ *p++) & 0xff];
		n--;
	}
	while (n >= 8) {
		uint32_t lo, hi;

		/* The first byte is the low one, whatever the CPU's byte order. */
		lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		lo ^= crc;
		crc = C.table[7][lo & 0xff] ^ C.table[6][(lo >> 8) & 0xff] ^ C.table[5][(lo >> 16) & 0xff] ^
		      C.table[4][lo >> 24] ^ C.table[3][hi & 0xff] ^ C.table[2][(hi >> 8) & 0xff] ^
		      C.table[1][(hi >> 16) & 0xff] ^ C.table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ C.table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if CRC_X86
/*
 * The CRC state after CRC_LANE zero bytes is linear in the state before:
 * this is the image of each of its 32 bits (bit i's: the state 1 << i run
 * through 8 * CRC_LANE steps c = c & 1 ? (c >> 1) ^ POLY : c >> 1).  The
 * tests check the three-stream path against the tables on inputs of every
 * length about the lanes.
 */
static const uint32_t lane_cols[32] = {
	0xc2a5b65e, 0x80a71a4d, 0x04a2426b, 0x094484d6, 0x128909ac, 0x25121358, 0x4a2426b0, 0x94484d60,
	0x2d7cec31, 0x5af9d862, 0xb5f3b0c4, 0x6e0b1779, 0xdc162ef2, 0xbdc02b15, 0x7e6c20db, 0xfcd841b6,
	0xfc5cf59d, 0xfd559dcb, 0xff474d67, 0xfb62ec3f, 0xf329ae8f, 0xe3bf2bef, 0xc292212f, 0x80c834af,
	0x047c1faf, 0x08f83f5e, 0x11f07ebc, 0x23e0fd78, 0x47c1faf0, 0x8f83f5e0, 0x1aeb9d31, 0x35d73a62,
};

/* shift[k][b]: the image of b << 8k, the xor of its bits' images. */
static void crc_shift_tables(void)
{
	for (int k = 0; k < 4; k++) {
		C.shift[k][0] = 0;
		for (int b = 1; b < 256; b++)
			C.shift[k][b] = C.shift[k][b & (b - 1)] ^ lane_cols[8 * k + __builtin_ctz(b)];
	}
	__atomic_store_n(&C.have_shift, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_shift(uint32_t crc)
{
	return C.shift[0][crc & 0xff] ^ C.shift[1][(crc >> 8) & 0xff] ^ C.shift[2][(crc >> 16) & 0xff] ^
	       C.shift[3][crc >> 24];
}

/* One word of each stream at offset i of the first; one word at p + i. */
#define CRC_WORDS3(i)                                                                                                  \
	do {                                                                                                           \
		memcpy(&v0, p + (i), 8);                                                                               \
		memcpy(&v1, p + CRC_LANE + (i), 8);                                                                    \
		memcpy(&v2, p + 2 * CRC_LANE + (i), 8);                                                                \
		c0 = _mm_crc32_u64(c0, v0);                                                                            \
		c1 = _mm_crc32_u64(c1, v1);                                                                            \
		c2 = _mm_crc32_u64(c2, v2);                                                                            \
	} while (0)
#define CRC_WORD(i)                                                                                                    \
	do {                                                                                                           \
		memcpy(&v, p + (i), 8);                                                                                \
		c0 = _mm_crc32_u64(c0, v);                                                                             \
	} while (0)

__attribute__((target("sse4.2"))) static uint32_t crc_run_hw(uint32_t crc, const unsigned char *p, size_t n)
{
	uint64_t c0 = crc;

	while (n && ((uintptr_t)p & 7)) {
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
		n--;
	}
	/*
	 * Three streams of CRC_LANE bytes each at once: the instruction's
	 * latency is three cycles and one can start every cycle.  The first
	 * two states are then moved past the bytes after them (shift) and
	 * joined with the third.
	 */
	if (n >= 3 * CRC_LANE && !__atomic_load_n(&C.have_shift, __ATOMIC_ACQUIRE))
		crc_shift_tables();
	while (n >= 3 * CRC_LANE) {
		uint64_t c1 = 0, c2 = 0, v0, v1, v2;

		/* Four words a stream per round, written out: -O2 does not
		 * unroll, and the loop's own instructions were a third. */
		for (size_t i = 0; i < CRC_LANE; i += 32) {
			CRC_WORDS3(i);
			CRC_WORDS3(i + 8);
			CRC_WORDS3(i + 16);
			CRC_WORDS3(i + 24);
		}
		c0 = crc_shift(crc_shift((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
		p += 3 * CRC_LANE;
		n -= 3 * CRC_LANE;
	}
	/* Most parts are shorter than three lanes: four words a round. */
	while (n >= 32) {
		uint64_t v;

		CRC_WORD(0);
		CRC_WORD(8);
		CRC_WORD(16);
		CRC_WORD(24);
		p += 32;
		n -= 32;
	}
	while (n >= 8) {
		uint64_t v;

		CRC_WORD(0);
		p += 8;
		n -= 8;
	}
	while (n--)
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
	return (uint32_t)c0;
}
#endif

static int crc_hw(void)
{
	if (C.hw < 0) {
#if CRC_X86
		__builtin_cpu_init();
		C.hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
		C.hw = 0;
#endif
	}
	return C.hw;
}

static uint32_t crc32c_of(const void *p, size_t n, int table)
{
#if CRC_X86
	if (!table && crc_hw())
		return ~crc_run_hw(0xFFFFFFFFu, p, n);
#endif
	return ~crc_run_table(0xFFFFFFFFu, p, n);
}

/* The CRC-32C of o (bytes, or any object with a contiguous buffer). */
static PyObject *crc32c_obj(PyObject *o, int table)
{
	Py_buffer view;
	uint32_t crc;

	if (PyBytes_CheckExact(o))
		return PyLong_FromUnsignedLong(crc32c_of(PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o), table));
	if (PyObject_GetBuffer(o, &view, PyBUF_SIMPLE) < 0)
		return NULL;
	crc = crc32c_of(view.buf, (size_t)view.len, table);
	PyBuffer_Release(&view);
	return PyLong_FromUnsignedLong(crc);
}

PyDoc_STRVAR(crc32c_doc, "crc32c(data) -> int\n\nThe CRC-32C (Castagnoli) of data, a bytes-like object: the crc32 "
			 "instruction\nwhen the CPU has it (crc32c_hw()), tables otherwise.");

static PyObject *pc_crc32c(PyObject *self, PyObject *o)
{
	return crc32c_obj(o, 0);
}

PyDoc_STRVAR(crc32c_table_doc, "crc32c_table(data) -> int\n\ncrc32c(data) computed on tables, whatever the CPU "
			       "(for tests).");

static PyObject *pc_crc32c_table(PyObject *self, PyObject *o)
{
	return crc32c_obj(o, 1);
}

PyDoc_STRVAR(crc32c_hw_doc, "crc32c_hw() -> bool\n\nWhether crc32c() runs on the CPU's crc32 instruction.");

static PyObject *pc_crc32c_hw(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(crc_hw());
}
