/*
 * ELF facts through libelf, the ld.so.cache reader and the DT_NEEDED resolver
 * that models glibc's loader.  Everything a file says is bounds-checked here
 * before it is used: see elf.h for the contract.
 */
#include "elffile.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <jansson.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_util.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

#define LDCACHE_MAGIC "glibc-ld.so.cache"
#define LDCACHE_VERSION "1.1"
#define LDCACHE_OLD_MAGIC "ld.so-1.7.0"
#define LDCACHE_HEADER 48 /* struct cache_file_new */
#define LDCACHE_ENTRY 24 /* struct file_entry_new */
#define LDCACHE_OLD_ENTRY 12 /* struct file_entry (old format) */

struct elf_cached {
	char *key; /* real path */
	dev_t dev;
	ino_t ino;
	struct elf_facts *facts; /* NULL when unreadable */
	char *error;
};

struct elf_loaded {
	size_t cached; /* index into r->cached */
	char *name; /* the name it was asked for by */
	char *path; /* the path it was opened at ($ORIGIN) */
};

static int libelf_ready(struct buf *err)
{
	static int state;

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	if (state < 0) {
		buf_addf(err, "libelf is out of date: %s", elf_errmsg(-1));
		return -1;
	}
	return 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/*
 * Replaces control bytes and bytes that are not valid UTF-8 with '?', so
 * that what a file says can be printed and written to JSON (which must be
 * UTF-8) and read back.
 */
static void sanitize(char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		size_t k;

		if (c < 0x20 || c == 0x7f) {
			s[i++] = '?';
			continue;
		}
		if (n == 1) {
			i++;
			continue;
		}
		for (k = 1; n && k < n; k++)
			if (i + k >= len || ((unsigned char)s[i + k] & 0xc0) != 0x80)
				n = 0;
		/* Overlong forms and surrogates are invalid too. */
		if (n == 2 && c < 0xc2)
			n = 0;
		if (n == 3 && ((c == 0xe0 && (unsigned char)s[i + 1] < 0xa0) ||
			       (c == 0xed && (unsigned char)s[i + 1] >= 0xa0)))
			n = 0;
		if (n == 4 && ((c == 0xf0 && (unsigned char)s[i + 1] < 0x90) || c > 0xf4 ||
			       (c == 0xf4 && (unsigned char)s[i + 1] >= 0x90)))
			n = 0;
		if (!n) {
			s[i++] = '?';
			continue;
		}
		i += n;
	}
}

static void facts_warn(struct elf_facts *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void facts_warn(struct elf_facts *f, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	/* A hostile file could produce thousands; a few say enough. */
	if (f->warnings.nr >= 32)
		return;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	sanitize(msg.buf, msg.len);
	strvec_push(&f->warnings, msg.buf);
	buf_release(&msg);
}

/*
 * Copies a string from the file, replacing control bytes so that names can
 * be printed safely.  Returns NULL (and warns) when it is too long.
 */
static char *file_string(struct elf_facts *f, const char *s, const char *what)
{
	size_t len = strnlen(s, ELF_MAX_STRING + 1);
	char *copy;

	if (len > ELF_MAX_STRING) {
		facts_warn(f, "%s longer than %d bytes ignored", what, ELF_MAX_STRING);
		return NULL;
	}
	copy = xstrndup(s, len);
	sanitize(copy, len);
	return copy;
}

/* elf_strptr with the section checked to be a string table first. */
static const char *strtab_get(Elf *e, size_t shnum, size_t strndx, size_t off)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (strndx == 0 || strndx >= shnum)
		return NULL;
	scn = elf_getscn(e, strndx);
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB)
		return NULL;
	if (off >= sh.sh_size)
		return NULL;
	return elf_strptr(e, strndx, off);
}

/* True when [off, off + len) lies inside a file of size bytes. */
static bool in_file(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

static bool is_version_at(const char *s, size_t len)
{
	size_t i = 0, dots = 0;

	if (len < 5 || (s[0] != '2' && s[0] != '3') || s[1] != '.')
		return false;
	for (i = 2; i < len; i++) {
		if (s[i] == '.') {
			if (s[i - 1] == '.' || ++dots > 1)
				return false;
		} else if (s[i] < '0' || s[i] > '9') {
			break;
		}
	}
	if (dots != 1 || s[i - 1] == '.')
		return false;
	/* A release suffix: a1, b2, rc1, and Debian's "+". */
	while (i < len && s[i] >= 'a' && s[i] <= 'z')
		i++;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i < len && s[i] == '+')
		i++;
	return i == len;
}

/* "3.11" from "libpython3.11.so.1.0" or "cpython-311"; 0 when not found. */
static int major_minor_from(const char *s, size_t len, char *out, size_t outlen)
{
	const char *p;

	if ((p = memmem(s, len, "libpython", 9))) {
		const char *q = p + 9;
		size_t n = 0;

		while (q + n < s + len && ((q[n] >= '0' && q[n] <= '9') || q[n] == '.'))
			n++;
		while (n && q[n - 1] == '.')
			n--;
		if (n >= 3 && n < outlen && q[1] == '.') {
			memcpy(out, q, n);
			out[n] = '\0';
			return 1;
		}
	}
	if ((p = memmem(s, len, "cpython-", 8))) {
		const char *q = p + 8;
		size_t n = 0;

		while (q + n < s + len && q[n] >= '0' && q[n] <= '9')
			n++;
		if (n >= 2 && n <= 3 && n + 1 < outlen) {
			out[0] = q[0];
			out[1] = '.';
			memcpy(out + 2, q + 1, n - 1);
			out[n + 1] = '\0';
			return 1;
		}
	}
	return 0;
}

/*
 * CPython keeps PY_VERSION ("3.11.2") as a string literal for
 * Py_GetVersion.  The linker may merge it into the tail of a longer string
 * ("/build/Python-3.13.0"), and other version-like literals exist, so the
 * major.minor named elsewhere in the file (the soname, "cpython-311") picks
 * the right candidate.
 */
static void find_py_version(struct elf_facts *f, const char *data, size_t size)
{
	struct strvec whole = STRVEC_INIT, tails = STRVEC_INIT;
	char want[16] = "";
	size_t i = 0, wantlen;

	if (f->soname)
		major_minor_from(f->soname, strlen(f->soname), want, sizeof(want));
	while (i < size) {
		const char *s = data + i;
		const char *nul = memchr(s, '\0', size - i);
		size_t len = nul ? (size_t)(nul - s) : size - i;
		size_t j;

		if (!want[0])
			major_minor_from(s, len, want, sizeof(want));
		if (is_version_at(s, len)) {
			if (whole.nr < 64) {
				char *v = xstrndup(s, len);

				strvec_push(&whole, v);
				free(v);
			}
		} else if (len > 6 && tails.nr < 64) {
			for (j = len - 5; j > 0 && j + 12 > len; j--)
				if ((s[j - 1] == '-' || s[j - 1] == '/') && is_version_at(s + j, len - j)) {
					char *v = xstrndup(s + j, len - j);

					strvec_push(&tails, v);
					free(v);
					break;
				}
		}
		i += len + 1;
	}
	wantlen = strlen(want);
	for (i = 0; !f->py_version && i < whole.nr + tails.nr; i++) {
		const char *v = i < whole.nr ? whole.v[i] : tails.v[i - whole.nr];

		if (wantlen ? !strncmp(v, want, wantlen) && v[wantlen] == '.' : whole.nr + tails.nr == 1)
			f->py_version = xstrdup(v);
	}
	if (!f->py_version && wantlen)
		f->py_version = xstrdup(want);
	strvec_clear(&whole);
	strvec_clear(&tails);
}

/*
 * Where dynamic-entry strings come from: the section named by sh_link, or
 * (without section headers) the DT_STRTAB bytes found through PT_LOAD.
 */
struct strsrc {
	Elf *e;
	size_t shnum, strndx;
	const char *raw; /* NULL: use the section */
	size_t rawlen;
};

static const char *strsrc_get(const struct strsrc *src, uint64_t off)
{
	if (!src->raw)
		return off > SIZE_MAX ? NULL : strtab_get(src->e, src->shnum, src->strndx, (size_t)off);
	if (off >= src->rawlen || !memchr(src->raw + off, '\0', src->rawlen - off))
		return NULL;
	return src->raw + off;
}

/* What read_dynamic learns beyond the facts, for the PT_DYNAMIC fallback. */
struct dyninfo {
	uint64_t strtab, strsz; /* DT_STRTAB (an address) and DT_STRSZ */
	uint64_t relasz, relsz, pltrelsz, pltrel;
};

static void read_dynamic(struct elf_facts *f, Elf_Data *data, size_t entsize,
			 const struct strsrc *src, struct dyninfo *info)
{
	size_t n, i, nr_needed = 0, repeated = 0;
	size_t needed_off[ELF_MAX_NEEDED];
	int64_t soname = -1, rpath = -1, runpath = -1;

	memset(info, 0, sizeof(*info));
	n = data->d_size / entsize;
	for (i = 0; i < n && i <= INT_MAX; i++) {
		GElf_Dyn d;

		if (!gelf_getdyn(data, (int)i, &d))
			break;
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_NEEDED:
			if (nr_needed < ELF_MAX_NEEDED)
				needed_off[nr_needed++] = d.d_un.d_val > SIZE_MAX ? SIZE_MAX : d.d_un.d_val;
			else if (nr_needed++ == ELF_MAX_NEEDED)
				facts_warn(f, "more than %d DT_NEEDED entries; the rest are ignored",
					   ELF_MAX_NEEDED);
			break;
		case DT_SONAME:
			soname = (int64_t)(d.d_un.d_val & INT64_MAX);
			break;
		case DT_RPATH:
			rpath = (int64_t)(d.d_un.d_val & INT64_MAX);
			break;
		case DT_RUNPATH:
			runpath = (int64_t)(d.d_un.d_val & INT64_MAX);
			break;
		case DT_RELACOUNT:
		case DT_RELCOUNT:
			f->nr_relative = d.d_un.d_val > SIZE_MAX / 2 ? SIZE_MAX / 2 : d.d_un.d_val;
			break;
		case DT_STRTAB: info->strtab = d.d_un.d_ptr; break;
		case DT_STRSZ: info->strsz = d.d_un.d_val; break;
		case DT_RELASZ: info->relasz = d.d_un.d_val; break;
		case DT_RELSZ: info->relsz = d.d_un.d_val; break;
		case DT_PLTRELSZ: info->pltrelsz = d.d_un.d_val; break;
		case DT_PLTREL: info->pltrel = d.d_un.d_val; break;
		}
	}
	if (!src)
		return;
	if (nr_needed > ELF_MAX_NEEDED)
		nr_needed = ELF_MAX_NEEDED;
	for (i = 0; i < nr_needed; i++) {
		const char *s = strsrc_get(src, needed_off[i]);
		char *copy;
		size_t k;

		if (!s) {
			facts_warn(f, "DT_NEEDED string offset %zu is outside the string table",
				   needed_off[i]);
			continue;
		}
		copy = file_string(f, s, "DT_NEEDED name");
		if (!copy)
			continue;
		for (k = 0; k < f->needed.nr && strcmp(f->needed.v[k], copy); k++)
			;
		if (!*copy || k < f->needed.nr) {
			/* The loader would look the same name up once. */
			if (!*copy)
				facts_warn(f, "empty DT_NEEDED name ignored");
			else
				repeated++;
			free(copy);
			continue;
		}
		strvec_push(&f->needed, copy);
		if (!f->libpython && starts_with(copy, "libpython"))
			f->libpython = xstrdup(copy);
		free(copy);
	}
	if (repeated)
		facts_warn(f, "%zu repeated DT_NEEDED names ignored", repeated);
#define DYNSTR(field, off, what)                                                 \
	if ((off) >= 0) {                                                        \
		const char *s_ = strsrc_get(src, (uint64_t)(off));               \
		if (s_)                                                          \
			f->field = file_string(f, s_, what);                     \
		else                                                             \
			facts_warn(f, what " string offset is outside the string table"); \
	}
	DYNSTR(soname, soname, "DT_SONAME");
	DYNSTR(rpath, rpath, "DT_RPATH");
	DYNSTR(runpath, runpath, "DT_RUNPATH");
#undef DYNSTR
}

static void read_dynamic_section(struct elf_facts *f, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
				 size_t shnum)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsize = gelf_fsize(e, ELF_T_DYN, 1, EV_CURRENT);
	struct strsrc src = { .e = e, .shnum = shnum, .strndx = sh->sh_link };
	struct dyninfo info;

	if (!data || !entsize) {
		facts_warn(f, "unreadable dynamic section: %s", elf_errmsg(-1));
		return;
	}
	read_dynamic(f, data, entsize, &src, &info);
}

/* File offset of a virtual address through the PT_LOAD segments. */
static bool vaddr_to_offset(Elf *e, size_t phnum, uint64_t addr, uint64_t len, size_t size,
			    uint64_t *off)
{
	size_t i;

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr >= ph.p_vaddr && addr - ph.p_vaddr <= ph.p_filesz &&
		    len <= ph.p_filesz - (addr - ph.p_vaddr)) {
			*off = ph.p_offset + (addr - ph.p_vaddr);
			return in_file(*off, len, size);
		}
	}
	return false;
}

/*
 * Without a usable dynamic section the loader still has PT_DYNAMIC; read
 * it the same way, with strings from DT_STRTAB and relocation counts from
 * DT_RELASZ, DT_RELSZ and DT_PLTRELSZ.
 */
static void read_pt_dynamic(struct elf_facts *f, Elf *e, size_t size, size_t phnum)
{
	size_t entsize = gelf_fsize(e, ELF_T_DYN, 1, EV_CURRENT);
	size_t relasize = gelf_fsize(e, ELF_T_RELA, 1, EV_CURRENT);
	size_t relsize = gelf_fsize(e, ELF_T_REL, 1, EV_CURRENT);
	struct strsrc src = { .e = e };
	struct dyninfo info;
	Elf_Data *dyn = NULL, *str;
	uint64_t stroff;
	size_t i;

	for (i = 0; i < phnum && !dyn; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		if (!in_file(ph.p_offset, ph.p_filesz, size) || ph.p_filesz < entsize) {
			facts_warn(f, "PT_DYNAMIC lies beyond the end of the file");
			return;
		}
		dyn = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_DYN);
	}
	if (!dyn || !entsize)
		return;
	read_dynamic(f, dyn, entsize, NULL, &info);
	if (!info.strtab || !info.strsz ||
	    !vaddr_to_offset(e, phnum, info.strtab, info.strsz, size, &stroff) ||
	    !(str = elf_getdata_rawchunk(e, (int64_t)stroff, info.strsz, ELF_T_BYTE))) {
		facts_warn(f, "DT_STRTAB lies outside the loaded segments");
		return;
	}
	src.raw = str->d_buf;
	src.rawlen = str->d_size;
	read_dynamic(f, dyn, entsize, &src, &info);
	if (relasize && relsize) {
		f->nr_relocs = info.relasz / relasize + info.relsz / relsize;
		f->nr_plt_relocs = info.pltrelsz / (info.pltrel == DT_REL ? relsize : relasize);
		f->nr_relocs += f->nr_plt_relocs;
	}
}

/* Counts symbols and notices whether Py_Initialize is defined here. */
static void read_symbols(struct elf_facts *f, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
			 size_t shnum, size_t count)
{
	Elf_Data *data;
	size_t i;

	if (f->defines_python)
		return;
	data = elf_getdata(scn, NULL);
	if (!data)
		return;
	for (i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		name = strtab_get(e, shnum, sh->sh_link, sym.st_name);
		if (name && (!strcmp(name, "Py_Initialize") || !strcmp(name, "Py_InitializeEx"))) {
			f->defines_python = true;
			return;
		}
	}
}

static void read_build_id(struct elf_facts *f, Elf_Scn *scn)
{
	static const char hex[] = "0123456789abcdef";
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, next;
	GElf_Nhdr nh;
	size_t name_off, desc_off;

	if (!data || !data->d_buf || f->build_id)
		return;
	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (next <= off)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    in_file(name_off, 4, data->d_size) && in_file(desc_off, nh.n_descsz, data->d_size) &&
		    !memcmp((const char *)data->d_buf + name_off, "GNU", 4) &&
		    nh.n_descsz > 0 && nh.n_descsz <= 64) {
			const unsigned char *d = (const unsigned char *)data->d_buf + desc_off;
			char *s = xmalloc(2 * nh.n_descsz + 1);
			size_t i;

			for (i = 0; i < nh.n_descsz; i++) {
				s[2 * i] = hex[d[i] >> 4];
				s[2 * i + 1] = hex[d[i] & 15];
			}
			s[2 * nh.n_descsz] = '\0';
			f->build_id = s;
			return;
		}
		off = next;
	}
}

/* Returns whether a dynamic section was found. */
static bool read_sections(struct elf_facts *f, Elf *e, size_t size, size_t shnum,
			  size_t shstrndx)
{
	size_t relsize = gelf_fsize(e, ELF_T_REL, 1, EV_CURRENT);
	size_t relasize = gelf_fsize(e, ELF_T_RELA, 1, EV_CURRENT);
	size_t symsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Scn *scn = NULL, *rodata = NULL;
	Elf_Scn *dynsym = NULL, *symtab = NULL;
	GElf_Shdr dynsym_sh, symtab_sh;
	bool have_dynamic = false;
	size_t seen = 0;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (++seen >= shnum)
			break; /* elf_nextscn stops too; this is belt and braces */
		if (!gelf_getshdr(scn, &sh))
			continue;
		name = strtab_get(e, shnum, shstrndx, sh.sh_name);
		if (!name)
			name = "";
		if (sh.sh_type != SHT_NOBITS && !in_file(sh.sh_offset, sh.sh_size, size)) {
			facts_warn(f, "section %zu ('%.64s') lies beyond the end of the file",
				   elf_ndxscn(scn), name);
			continue;
		}
		switch (sh.sh_type) {
		case SHT_DYNAMIC:
			if (have_dynamic) {
				facts_warn(f, "more than one dynamic section; the first is used");
				break;
			}
			have_dynamic = true;
			read_dynamic_section(f, e, scn, &sh, shnum);
			break;
		case SHT_REL:
		case SHT_RELA:
			if (sh.sh_flags & SHF_ALLOC) {
				size_t es = sh.sh_type == SHT_RELA ? relasize : relsize;
				size_t n = es ? sh.sh_size / es : 0;

				f->nr_relocs += n;
				if (ends_with(name, ".plt"))
					f->nr_plt_relocs += n;
			}
			break;
		case SHT_DYNSYM:
			f->nr_dynsyms = symsize ? sh.sh_size / symsize : 0;
			dynsym = scn;
			dynsym_sh = sh;
			break;
		case SHT_SYMTAB: {
			GElf_Shdr str;
			Elf_Scn *strscn;

			f->nr_symtab = symsize ? sh.sh_size / symsize : 0;
			f->symtab_bytes = add_sat(f->symtab_bytes, sh.sh_size);
			if (sh.sh_link && sh.sh_link < shnum && (strscn = elf_getscn(e, sh.sh_link)) &&
			    gelf_getshdr(strscn, &str) && str.sh_type == SHT_STRTAB)
				f->symtab_bytes = add_sat(f->symtab_bytes, str.sh_size);
			symtab = scn;
			symtab_sh = sh;
			break;
		}
		case SHT_NOTE:
			read_build_id(f, scn);
			break;
		}
		if (starts_with(name, ".debug") || starts_with(name, ".zdebug")) {
			f->nr_debug_sections++;
			if (sh.sh_type != SHT_NOBITS)
				f->debug_bytes = add_sat(f->debug_bytes, sh.sh_size);
		} else if (!strcmp(name, ".gnu_debuglink")) {
			f->has_debuglink = true;
		} else if (!strcmp(name, ".rodata") && sh.sh_type == SHT_PROGBITS) {
			rodata = scn;
		}
	}
	if (dynsym)
		read_symbols(f, e, dynsym, &dynsym_sh, shnum, f->nr_dynsyms);
	if (symtab)
		read_symbols(f, e, symtab, &symtab_sh, shnum, f->nr_symtab);
	if (f->defines_python && rodata) {
		Elf_Data *d = elf_getdata(rodata, NULL);

		if (d && d->d_buf)
			find_py_version(f, d->d_buf, d->d_size);
	}
	return have_dynamic;
}

static void read_segments(struct elf_facts *f, Elf *e, size_t size, size_t phnum)
{
	size_t i;

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph))
			break;
		if (ph.p_type == PT_LOAD) {
			f->nr_load++;
			f->load_filesz = add_sat(f->load_filesz, ph.p_filesz);
			f->load_memsz = add_sat(f->load_memsz, ph.p_memsz);
			if (!in_file(ph.p_offset, ph.p_filesz, size))
				facts_warn(f, "segment %zu lies beyond the end of the file", i);
		} else if (ph.p_type == PT_INTERP && !f->interp) {
			const char *s;
			Elf_Data *d;

			if (!in_file(ph.p_offset, ph.p_filesz, size) || !ph.p_filesz ||
			    ph.p_filesz > ELF_MAX_STRING) {
				facts_warn(f, "PT_INTERP lies beyond the end of the file or is too long");
				continue;
			}
			d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
			if (!d || !d->d_buf)
				continue;
			s = d->d_buf;
			if (!memchr(s, '\0', d->d_size)) {
				facts_warn(f, "PT_INTERP is not NUL-terminated");
				continue;
			}
			f->interp = file_string(f, s, "PT_INTERP");
		}
	}
}

static int inspect_elf(Elf *e, size_t size, struct elf_facts *f, const char *name,
		       struct buf *err)
{
	GElf_Ehdr eh;
	size_t shnum = 0, phnum = 0, shstrndx = 0;
	int cls;

	switch (elf_kind(e)) {
	case ELF_K_ELF:
		break;
	case ELF_K_AR:
		buf_addf(err, "cannot read '%s': an ar archive, not a shared object", name);
		return -1;
	default:
		buf_addf(err, "cannot read '%s': not an ELF file", name);
		return -1;
	}
	cls = gelf_getclass(e);
	if (cls != ELFCLASS32 && cls != ELFCLASS64) {
		buf_addf(err, "cannot read '%s': bad ELF class", name);
		return -1;
	}
	if (!gelf_getehdr(e, &eh)) {
		buf_addf(err, "cannot read '%s': bad ELF header: %s", name, elf_errmsg(-1));
		return -1;
	}
	if (eh.e_ident[EI_DATA] != ELFDATA2LSB && eh.e_ident[EI_DATA] != ELFDATA2MSB) {
		buf_addf(err, "cannot read '%s': bad ELF byte order %u", name, eh.e_ident[EI_DATA]);
		return -1;
	}
	if (eh.e_ident[EI_VERSION] != EV_CURRENT) {
		buf_addf(err, "cannot read '%s': bad ELF version %u", name, eh.e_ident[EI_VERSION]);
		return -1;
	}
	if (elf_getshdrnum(e, &shnum) || elf_getphdrnum(e, &phnum)) {
		buf_addf(err, "cannot read '%s': bad section or program header table: %s", name,
			 elf_errmsg(-1));
		return -1;
	}
	if (shnum) {
		size_t es = gelf_fsize(e, ELF_T_SHDR, 1, EV_CURRENT);

		if (eh.e_shentsize != es) {
			buf_addf(err, "cannot read '%s': section header size %u, expected %zu", name,
				 eh.e_shentsize, es);
			return -1;
		}
		if (shnum > size / es || !in_file(eh.e_shoff, (uint64_t)shnum * es, size)) {
			buf_addf(err, "cannot read '%s': %zu section headers at offset %llu do not fit in %zu bytes",
				 name, shnum, (unsigned long long)eh.e_shoff, size);
			return -1;
		}
		if (elf_getshdrstrndx(e, &shstrndx) || shstrndx >= shnum)
			shstrndx = 0;
	}
	if (phnum) {
		size_t es = gelf_fsize(e, ELF_T_PHDR, 1, EV_CURRENT);

		if (eh.e_phentsize != es) {
			buf_addf(err, "cannot read '%s': program header size %u, expected %zu", name,
				 eh.e_phentsize, es);
			return -1;
		}
		if (phnum > size / es || !in_file(eh.e_phoff, (uint64_t)phnum * es, size)) {
			buf_addf(err, "cannot read '%s': %zu program headers at offset %llu do not fit in %zu bytes",
				 name, phnum, (unsigned long long)eh.e_phoff, size);
			return -1;
		}
	}
	f->elf_class = cls == ELFCLASS64 ? 64 : 32;
	f->big_endian = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	f->machine = eh.e_machine;
	f->type = eh.e_type;
	f->file_size = (int64_t)size;
	read_segments(f, e, size, phnum);
	if (!shnum && eh.e_shnum)
		facts_warn(f, "section header table unreadable (%u entries at offset %llu); using "
			   "program headers", eh.e_shnum, (unsigned long long)eh.e_shoff);
	if (!(shnum && read_sections(f, e, size, shnum, shstrndx)))
		read_pt_dynamic(f, e, size, phnum);
	return 0;
}

static void ldcache_add(struct elf_ldcache *c, const char *key, const char *value,
			int32_t flags, uint64_t hwcap)
{
	struct elf_ldcache_entry *en;

	ALLOC_GROW(c->entries, c->nr + 1, c->alloc);
	en = &c->entries[c->nr++];
	en->key = key;
	en->value = value;
	en->flags = flags;
	en->hwcap = hwcap;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A NUL-terminated string at base + off within [base, base + len), or NULL. */
static const char *ldcache_str(const char *base, size_t len, uint32_t off)
{
	if (off >= len || !memchr(base + off, '\0', len - off))
		return NULL;
	return base + off;
}

static void cached_free(struct elf_cached *c)
{
	free(c->key);
	if (c->facts) {
		elf_facts_release(c->facts);
		free(c->facts);
	}
	free(c->error);
}

static const char *multiarch(unsigned machine, int cls)
{
	switch (machine) {
	case EM_X86_64: return cls == 64 ? "x86_64-linux-gnu" : "x86_64-linux-gnux32";
	case EM_386: return "i386-linux-gnu";
	case EM_AARCH64: return "aarch64-linux-gnu";
	case EM_ARM: return "arm-linux-gnueabihf";
	case EM_PPC64: return "powerpc64le-linux-gnu";
	case EM_S390: return "s390x-linux-gnu";
	case EM_RISCV: return "riscv64-linux-gnu";
	}
	return NULL;
}

static const char *platform(unsigned machine)
{
	switch (machine) {
	case EM_X86_64: return "x86_64";
	case EM_386: return "i686";
	case EM_AARCH64: return "aarch64";
	}
	return "";
}

/*
 * Returns the index of path in the inspection cache, inspecting it on first
 * sight; -1 when it does not exist (err untouched, errno set) and -2 when it
 * exists but cannot be read (err set).
 */
static long resolver_lookup(struct elf_resolver *r, const char *path, struct buf *err)
{
	char *real = realpath(path, NULL);
	struct stat st;
	struct elf_cached *c;
	struct buf msg = BUF_INIT;
	size_t i;

	if (!real)
		return -1;
	if (stat(real, &st)) {
		free(real);
		return -1;
	}
	for (i = 0; i < r->nr_cached; i++)
		if (r->cached[i].dev == st.st_dev && r->cached[i].ino == st.st_ino) {
			free(real);
			if (!r->cached[i].facts) {
				buf_adds(err, r->cached[i].error);
				return -2;
			}
			return (long)i;
		}
	ALLOC_GROW(r->cached, r->nr_cached + 1, r->alloc_cached);
	c = &r->cached[r->nr_cached];
	memset(c, 0, sizeof(*c));
	c->key = real;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->facts = xmalloc(sizeof(*c->facts));
	elf_facts_init(c->facts);
	if (elf_inspect_file(path, c->facts, &msg)) {
		elf_facts_release(c->facts);
		free(c->facts);
		c->facts = NULL;
		c->error = buf_detach(&msg, NULL);
		buf_adds(err, c->error);
		r->nr_cached++;
		return -2;
	}
	buf_release(&msg);
	return (long)r->nr_cached++;
}

static void tree_warn(struct elf_tree *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tree_warn(struct elf_tree *t, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	if (t->warnings.nr >= 64)
		return;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	sanitize(msg.buf, msg.len);
	strvec_push(&t->warnings, msg.buf);
	buf_release(&msg);
}

static struct elf_lib *tree_add(struct elf_tree *t, const char *name, int parent)
{
	struct elf_lib *l;

	ALLOC_GROW(t->libs, t->nr + 1, t->alloc);
	l = &t->libs[t->nr++];
	memset(l, 0, sizeof(*l));
	l->name = xstrdup(name);
	l->parent = parent;
	l->depth = parent < 0 ? 0 : t->libs[parent].depth + 1;
	return l;
}

static void dirname_of(const char *path, struct buf *out)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		buf_adds(out, ".");
	else if (slash == path)
		buf_adds(out, "/");
	else
		buf_add(out, path, (size_t)(slash - path));
}

/*
 * Expands $ORIGIN, ${ORIGIN}, $LIB and $PLATFORM in one search directory.
 * Returns -1 for an unknown token: glibc drops such a directory.
 */
static int expand_dst(const char *dir, size_t len, const char *origin_of,
		      const struct elf_facts *f, struct buf *out)
{
	size_t i = 0;

	while (i < len) {
		const char *tok = NULL, *val = NULL;
		size_t toklen = 0;
		struct buf tmp = BUF_INIT;

		if (dir[i] != '$') {
			buf_addch(out, dir[i++]);
			continue;
		}
		if (i + 1 < len && dir[i + 1] == '{') {
			const char *close = memchr(dir + i, '}', len - i);

			if (!close)
				return -1;
			tok = dir + i + 2;
			toklen = (size_t)(close - tok);
			i = (size_t)(close - dir) + 1;
		} else {
			tok = dir + i + 1;
			while (i + 1 + toklen < len &&
			       ((tok[toklen] >= 'A' && tok[toklen] <= 'Z') || tok[toklen] == '_'))
				toklen++;
			i += 1 + toklen;
		}
		if (toklen == 6 && !memcmp(tok, "ORIGIN", 6)) {
			dirname_of(origin_of, &tmp);
			buf_add(out, tmp.buf, tmp.len);
			buf_release(&tmp);
			continue;
		} else if (toklen == 3 && !memcmp(tok, "LIB", 3)) {
			const char *ma = multiarch(f->machine, f->elf_class);

			buf_adds(out, "lib");
			if (ma) {
				buf_addch(out, '/');
				buf_adds(out, ma);
			}
			continue;
		} else if (toklen == 8 && !memcmp(tok, "PLATFORM", 8)) {
			val = platform(f->machine);
			buf_adds(out, val);
			continue;
		}
		return -1;
	}
	return 0;
}

/* Index into r->loaded of an object known by name (asked-for name or soname). */
static long loaded_by_name(struct elf_resolver *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nr_loaded; i++) {
		const struct elf_facts *f = r->cached[r->loaded[i].cached].facts;

		if (!strcmp(r->loaded[i].name, name) || (f->soname && !strcmp(f->soname, name)))
			return (long)i;
	}
	return -1;
}

static long loaded_by_cached(struct elf_resolver *r, size_t cached)
{
	size_t i;

	for (i = 0; i < r->nr_loaded; i++)
		if (r->loaded[i].cached == cached)
			return (long)i;
	return -1;
}

static void loaded_add(struct elf_resolver *r, size_t cached, const char *name, const char *path)
{
	struct elf_loaded *l;

	ALLOC_GROW(r->loaded, r->nr_loaded + 1, r->alloc_loaded);
	l = &r->loaded[r->nr_loaded++];
	l->cached = cached;
	l->name = xstrdup(name);
	l->path = xstrdup(path);
}

/*
 * Tries one candidate file for a DT_NEEDED name.  The loader skips files
 * that are missing, unreadable or of another class or machine, and goes on
 * searching; so do we.  Returns the cache index or -1.
 */
static long try_candidate(struct elf_resolver *r, struct elf_tree *t, const char *path,
			  const struct elf_facts *want)
{
	struct buf err = BUF_INIT;
	long idx = resolver_lookup(r, path, &err);
	const struct elf_facts *f;

	if (idx == -2)
		tree_warn(t, "skipped %s", err.buf);
	buf_release(&err);
	if (idx < 0)
		return -1;
	f = r->cached[idx].facts;
	if (f->elf_class != want->elf_class || f->machine != want->machine) {
		tree_warn(t, "skipped '%s': ELF class or machine differs from the root", path);
		return -1;
	}
	return idx;
}

/* Searches a colon-separated directory list; returns the cache index or -1. */
static long search_list(struct elf_resolver *r, struct elf_tree *t, const char *list,
			const char *origin_of, const struct elf_facts *want, const char *name,
			struct buf *found)
{
	const char *p = list;

	while (p) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		struct buf dir = BUF_INIT;
		long idx = -1;

		if (!expand_dst(p, len, origin_of, want, &dir)) {
			if (!dir.len)
				buf_addch(&dir, '.');
			buf_reset(found);
			buf_addf(found, "%s/%s", dir.buf, name);
			idx = try_candidate(r, t, found->buf, want);
		}
		buf_release(&dir);
		if (idx >= 0)
			return idx;
		p = colon ? colon + 1 : NULL;
	}
	return -1;
}

static int ldcache_ensure(struct elf_resolver *r, struct elf_tree *t)
{
	struct buf err = BUF_INIT;
	struct buf path = BUF_INIT;

	if (r->ldcache_state || !r->ldcache_path)
		return r->ldcache_state > 0;
	buf_addf(&path, "%s%s", r->sysroot ? r->sysroot : "", r->ldcache_path);
	r->ldcache_state = elf_ldcache_load(&r->ldcache, path.buf, &err) ? -1 : 1;
	if (r->ldcache_state < 0)
		tree_warn(t, "%s", err.buf);
	buf_release(&err);
	buf_release(&path);
	return r->ldcache_state > 0;
}

/*
 * Finds a DT_NEEDED name for the object at tree index req, in glibc's order.
 * Fills how and found (the path) and returns the cache index, or -1.
 */
static long search_needed(struct elf_resolver *r, struct elf_tree *t, int req, const char *name,
			  const char **how, struct buf *found)
{
	const struct elf_facts *want = t->libs[0].facts;
	const struct elf_facts *rf = t->libs[req].facts;
	static const char *const defaults[] = { "/lib/%s", "/usr/lib/%s", "/lib", "/usr/lib" };
	const char *ma = multiarch(want->machine, want->elf_class);
	long idx;
	int i;
	size_t k;

	if (strchr(name, '/')) {
		struct buf exp = BUF_INIT;

		*how = "path";
		if (expand_dst(name, strlen(name), t->libs[req].path, want, &exp)) {
			buf_release(&exp);
			return -1;
		}
		buf_reset(found);
		buf_add(found, exp.buf, exp.len);
		buf_release(&exp);
		return try_candidate(r, t, found->buf, want);
	}
	/* DT_RPATH of the object and of those that loaded it, unless it has DT_RUNPATH. */
	if (!rf->runpath) {
		*how = "rpath";
		for (i = req; i >= 0; i = t->libs[i].parent) {
			const struct elf_facts *af = t->libs[i].facts;

			if (af && af->rpath && !af->runpath &&
			    (idx = search_list(r, t, af->rpath, t->libs[i].path, want, name, found)) >= 0)
				return idx;
		}
	}
	*how = "LD_LIBRARY_PATH";
	for (k = 0; k < r->ld_library_path.nr; k++)
		if ((idx = search_list(r, t, r->ld_library_path.v[k], t->libs[req].path, want, name,
				       found)) >= 0)
			return idx;
	if (rf->runpath) {
		*how = "runpath";
		if ((idx = search_list(r, t, rf->runpath, t->libs[req].path, want, name, found)) >= 0)
			return idx;
	}
	*how = "ld.so.cache";
	if (ldcache_ensure(r, t)) {
		for (k = 0; k < r->ldcache.nr; k++) {
			if (strcmp(r->ldcache.entries[k].key, name))
				continue;
			buf_reset(found);
			buf_addf(found, "%s%s", r->sysroot ? r->sysroot : "", r->ldcache.entries[k].value);
			if ((idx = try_candidate(r, t, found->buf, want)) >= 0)
				return idx;
		}
	}
	*how = "default";
	for (k = 0; k < ARRAY_SIZE(defaults); k++) {
		if (strstr(defaults[k], "%s") && !ma)
			continue;
		buf_reset(found);
		buf_adds(found, r->sysroot ? r->sysroot : "");
		if (strstr(defaults[k], "%s"))
			buf_addf(found, k == 0 ? "/lib/%s/%s" : "/usr/lib/%s/%s", ma, name);
		else
			buf_addf(found, "%s/%s", defaults[k], name);
		if ((idx = try_candidate(r, t, found->buf, want)) >= 0)
			return idx;
	}
	return -1;
}

static bool is_ancestor(const struct elf_tree *t, int node, const struct elf_facts *f)
{
	int i;

	for (i = node; i >= 0; i = t->libs[i].parent)
		if (t->libs[i].facts == f)
			return true;
	return false;
}

static void resolve_needed(struct elf_resolver *r, struct elf_tree *t, int req, const char *name)
{
	struct buf found = BUF_INIT;
	const char *how = NULL;
	struct elf_lib *l;
	long li = loaded_by_name(r, name), ci;
	size_t i;

	for (i = 1; li < 0 && i < t->nr; i++)
		if (!t->libs[i].facts && !strcmp(t->libs[i].name, name))
			goto out; /* already reported missing */
	if (li < 0) {
		ci = search_needed(r, t, req, name, &how, &found);
		if (ci >= 0)
			li = loaded_by_cached(r, (size_t)ci);
		if (ci < 0) {
			l = tree_add(t, name, req);
			l->error = xstrdup("not found");
			goto out;
		}
		if (li < 0) {
			if (r->nr_loaded >= ELF_MAX_OBJECTS) {
				tree_warn(t, "more than %d objects; '%s' and later ones are not loaded",
					  ELF_MAX_OBJECTS, name);
				goto out;
			}
			l = tree_add(t, name, req);
			l->path = xstrdup(found.buf);
			l->how = how;
			l->facts = r->cached[ci].facts;
			loaded_add(r, (size_t)ci, name, found.buf);
			goto out;
		}
	}
	/* Already in the process: this tree's own object, or one loaded before. */
	{
		const struct elf_facts *f = r->cached[r->loaded[li].cached].facts;

		for (i = 0; i < t->nr; i++)
			if (t->libs[i].facts == f) {
				if (is_ancestor(t, req, f))
					tree_warn(t, "'%s' needs '%s', which needs it back (a loop)",
						  t->libs[req].name, name);
				goto out;
			}
		l = tree_add(t, name, req);
		l->path = xstrdup(r->loaded[li].path);
		l->how = "loaded";
		l->preloaded = true;
		l->facts = f;
	}
out:
	buf_release(&found);
}

/* The first executable called name in $PATH, as a real path; NULL with errno set. */
static char *path_lookup(const char *name)
{
	const char *p = getenv("PATH");
	struct buf cand = BUF_INIT;
	char *real = NULL;

	if (!p || !*p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (p && !real) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		buf_reset(&cand);
		buf_add(&cand, len ? p : ".", len ? len : 1);
		buf_addf(&cand, "/%s", name);
		if (!access(cand.buf, X_OK))
			real = realpath(cand.buf, NULL);
		p = colon ? colon + 1 : NULL;
	}
	buf_release(&cand);
	if (!real)
		errno = ENOENT;
	return real;
}

static void python_version_from_soname(const char *name, struct elf_python *py)
{
	char mm[16];

	if (major_minor_from(name, strlen(name), mm, sizeof(mm)))
		py->version = xstrdup(mm);
}

static const struct {
	unsigned machine;
	const char *name;
} machine_names[] = {
	{ EM_X86_64, "x86-64" }, { EM_386, "i386" }, { EM_AARCH64, "AArch64" },
	{ EM_ARM, "ARM" }, { EM_PPC64, "PowerPC64" }, { EM_S390, "S/390" },
	{ EM_RISCV, "RISC-V" },
};

static void json_str_field(struct buf *out, const char *key, const char *val, bool *first)
{
	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_addch(out, ':');
	if (val)
		buf_add_json_str(out, val, strlen(val));
	else
		buf_adds(out, "null");
}

static void json_int_field(struct buf *out, const char *key, int64_t v, bool *first)
{
	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_addch(out, ':');
	buf_add_i64(out, v);
}

static void json_bool_field(struct buf *out, const char *key, bool v, bool *first)
{
	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_adds(out, v ? ":true" : ":false");
}

static void json_strvec_field(struct buf *out, const char *key, const struct strvec *sv,
			      bool *first)
{
	size_t i;

	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_adds(out, ":[");
	for (i = 0; i < sv->nr; i++) {
		if (i)
			buf_addch(out, ',');
		buf_add_json_str(out, sv->v[i], strlen(sv->v[i]));
	}
	buf_addch(out, ']');
}

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static uint64_t json_u64(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

void elf_facts_init(struct elf_facts *f)
{
	memset(f, 0, sizeof(*f));
	strvec_init(&f->needed);
	strvec_init(&f->warnings);
}

void elf_facts_release(struct elf_facts *f)
{
	free(f->path);
	free(f->interp);
	free(f->soname);
	free(f->rpath);
	free(f->runpath);
	free(f->build_id);
	free(f->libpython);
	free(f->py_version);
	strvec_clear(&f->needed);
	strvec_clear(&f->warnings);
	elf_facts_init(f);
}

int elf_inspect_mem(const char *name, const void *data, size_t size, struct elf_facts *out,
		    struct buf *err)
{
	const unsigned char *ident;
	Elf *e = NULL;
	int ret = -1;

	elf_facts_release(out);
	if (libelf_ready(err))
		goto out;
	if (size < EI_NIDENT || memcmp(data, ELFMAG, SELFMAG)) {
		buf_addf(err, "cannot read '%s': not an ELF file", name);
		goto out;
	}
	ident = data;
	if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) {
		buf_addf(err, "cannot read '%s': bad ELF class %u", name, ident[EI_CLASS]);
		goto out;
	}
	if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB) {
		buf_addf(err, "cannot read '%s': bad ELF byte order %u", name, ident[EI_DATA]);
		goto out;
	}
	if (ident[EI_VERSION] != EV_CURRENT) {
		buf_addf(err, "cannot read '%s': bad ELF version %u", name, ident[EI_VERSION]);
		goto out;
	}
	/* elf_memory does not write to the image when it is only read. */
	e = elf_memory((char *)data, size);
	if (!e) {
		buf_addf(err, "cannot read '%s': %s", name, elf_errmsg(-1));
		goto out;
	}
	if (inspect_elf(e, size, out, name, err))
		goto out;
	out->path = xstrdup(name);
	ret = 0;
out:
	if (e)
		elf_end(e);
	if (ret)
		elf_facts_release(out);
	return ret;
}

int elf_inspect_file(const char *path, struct elf_facts *out, struct buf *err)
{
	struct stat st;
	void *map = MAP_FAILED;
	int fd = -1, ret = -1;

	elf_facts_release(out);
	/* O_NONBLOCK: opening a FIFO must not hang; it is refused below. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st)) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		buf_addf(err, "cannot read '%s': a directory", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		buf_addf(err, "cannot read '%s': not a regular file", path);
		goto out;
	}
	if (st.st_size < EI_NIDENT) {
		buf_addf(err, "cannot read '%s': not an ELF file (%lld bytes)", path,
			 (long long)st.st_size);
		goto out;
	}
	if ((uint64_t)st.st_size > SIZE_MAX / 2) {
		buf_addf(err, "cannot read '%s': too large", path);
		goto out;
	}
	/*
	 * A private writable mapping: libelf may convert data in place, and the
	 * file must never change.
	 */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	ret = elf_inspect_mem(path, map, (size_t)st.st_size, out, err);
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	return ret;
}

bool elf_facts_unstripped(const struct elf_facts *f)
{
	return f->nr_symtab > 0 || f->nr_debug_sections > 0;
}

uint64_t elf_facts_strippable_bytes(const struct elf_facts *f)
{
	return add_sat(f->symtab_bytes, f->debug_bytes);
}

const char *elf_machine_name(unsigned machine, char *scratch, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(machine_names); i++)
		if (machine_names[i].machine == machine)
			return machine_names[i].name;
	snprintf(scratch, len, "machine %u", machine);
	return scratch;
}

void elf_facts_to_json(const struct elf_facts *f, struct buf *out)
{
	bool first = true;

	buf_addch(out, '{');
	json_str_field(out, "path", f->path, &first);
	json_int_field(out, "file_size", f->file_size, &first);
	json_int_field(out, "class", f->elf_class, &first);
	json_bool_field(out, "big_endian", f->big_endian, &first);
	json_int_field(out, "machine", f->machine, &first);
	json_int_field(out, "type", f->type, &first);
	json_int_field(out, "load_segments", (int64_t)f->nr_load, &first);
	json_int_field(out, "load_filesz", clamp64(f->load_filesz), &first);
	json_int_field(out, "load_memsz", clamp64(f->load_memsz), &first);
	json_str_field(out, "interp", f->interp, &first);
	json_str_field(out, "soname", f->soname, &first);
	json_str_field(out, "rpath", f->rpath, &first);
	json_str_field(out, "runpath", f->runpath, &first);
	json_strvec_field(out, "needed", &f->needed, &first);
	json_int_field(out, "relocs", (int64_t)f->nr_relocs, &first);
	json_int_field(out, "plt_relocs", (int64_t)f->nr_plt_relocs, &first);
	json_int_field(out, "relative_relocs", (int64_t)f->nr_relative, &first);
	json_int_field(out, "dynsyms", (int64_t)f->nr_dynsyms, &first);
	json_int_field(out, "symtab", (int64_t)f->nr_symtab, &first);
	json_int_field(out, "symtab_bytes", clamp64(f->symtab_bytes), &first);
	json_int_field(out, "debug_sections", (int64_t)f->nr_debug_sections, &first);
	json_int_field(out, "debug_bytes", clamp64(f->debug_bytes), &first);
	json_bool_field(out, "debuglink", f->has_debuglink, &first);
	json_str_field(out, "build_id", f->build_id, &first);
	json_str_field(out, "libpython", f->libpython, &first);
	json_bool_field(out, "defines_python", f->defines_python, &first);
	json_str_field(out, "python_version", f->py_version, &first);
	json_strvec_field(out, "warnings", &f->warnings, &first);
	buf_addch(out, '}');
}

int elf_facts_from_json(const char *text, size_t len, struct elf_facts *out, struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr), *arr;
	size_t i;
	int ret = -1;

	elf_facts_release(out);
	if (!root) {
		buf_addf(err, "bad ELF facts JSON at line %d: %s", jerr.line, jerr.text);
		goto out;
	}
	if (!json_is_object(root)) {
		buf_adds(err, "bad ELF facts JSON: not an object");
		goto out;
	}
	out->path = json_util_strdup(root, "path");
	out->file_size = (int64_t)json_u64(root, "file_size");
	out->elf_class = (int)json_u64(root, "class");
	out->big_endian = json_is_true(json_object_get(root, "big_endian"));
	out->machine = (unsigned)json_u64(root, "machine");
	out->type = (unsigned)json_u64(root, "type");
	out->nr_load = json_u64(root, "load_segments");
	out->load_filesz = json_u64(root, "load_filesz");
	out->load_memsz = json_u64(root, "load_memsz");
	out->interp = json_util_strdup(root, "interp");
	out->soname = json_util_strdup(root, "soname");
	out->rpath = json_util_strdup(root, "rpath");
	out->runpath = json_util_strdup(root, "runpath");
	arr = json_object_get(root, "needed");
	for (i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
		const char *s = json_string_value(json_array_get(arr, i));

		if (s)
			strvec_push(&out->needed, s);
	}
	out->nr_relocs = json_u64(root, "relocs");
	out->nr_plt_relocs = json_u64(root, "plt_relocs");
	out->nr_relative = json_u64(root, "relative_relocs");
	out->nr_dynsyms = json_u64(root, "dynsyms");
	out->nr_symtab = json_u64(root, "symtab");
	out->symtab_bytes = json_u64(root, "symtab_bytes");
	out->nr_debug_sections = json_u64(root, "debug_sections");
	out->debug_bytes = json_u64(root, "debug_bytes");
	out->has_debuglink = json_is_true(json_object_get(root, "debuglink"));
	out->build_id = json_util_strdup(root, "build_id");
	out->libpython = json_util_strdup(root, "libpython");
	out->defines_python = json_is_true(json_object_get(root, "defines_python"));
	out->py_version = json_util_strdup(root, "python_version");
	arr = json_object_get(root, "warnings");
	for (i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
		const char *s = json_string_value(json_array_get(arr, i));

		if (s)
			strvec_push(&out->warnings, s);
	}
	ret = 0;
out:
	if (root)
		json_decref(root);
	return ret;
}

void elf_ldcache_init(struct elf_ldcache *c)
{
	memset(c, 0, sizeof(*c));
	buf_init(&c->data, 0);
}

void elf_ldcache_release(struct elf_ldcache *c)
{
	buf_release(&c->data);
	free(c->entries);
	elf_ldcache_init(c);
}

int elf_ldcache_parse(struct elf_ldcache *c, const void *data, size_t len, struct buf *err)
{
	const unsigned char *p;
	const char *base;
	size_t start = 0, avail, nlibs, i;
	int ret = -1;

	elf_ldcache_release(c);
	buf_add(&c->data, data, len);
	p = (const unsigned char *)c->data.buf;
	/* An old-format table may come first; the new one follows it, 8-aligned. */
	if (len >= 16 && !memcmp(p, LDCACHE_OLD_MAGIC, 11)) {
		uint32_t old = rd32(p + 12);

		if (old > (len - 16) / LDCACHE_OLD_ENTRY) {
			buf_adds(err, "bad ld.so.cache: old table larger than the file");
			goto out;
		}
		start = 16 + (size_t)old * LDCACHE_OLD_ENTRY;
		start = (start + 7) & ~(size_t)7;
	}
	if (start > len || len - start < LDCACHE_HEADER ||
	    memcmp(p + start, LDCACHE_MAGIC, 17) || memcmp(p + start + 17, LDCACHE_VERSION, 3)) {
		buf_adds(err, "bad ld.so.cache: no glibc-ld.so.cache1.1 header");
		goto out;
	}
	avail = len - start;
	base = c->data.buf + start;
	nlibs = rd32(p + start + 20);
	if (nlibs > (avail - LDCACHE_HEADER) / LDCACHE_ENTRY) {
		buf_addf(err, "bad ld.so.cache: %zu entries do not fit in %zu bytes", nlibs, avail);
		goto out;
	}
	for (i = 0; i < nlibs; i++) {
		const unsigned char *en = p + start + LDCACHE_HEADER + i * LDCACHE_ENTRY;
		const char *key = ldcache_str(base, avail, rd32(en + 4));
		const char *value = ldcache_str(base, avail, rd32(en + 8));

		if (!key || !value) {
			buf_addf(err, "bad ld.so.cache: entry %zu points outside the file", i);
			goto out;
		}
		ldcache_add(c, key, value, (int32_t)rd32(en), rd64(en + 16));
	}
	ret = 0;
out:
	if (ret)
		elf_ldcache_release(c);
	return ret;
}

int elf_ldcache_load(struct elf_ldcache *c, const char *path, struct buf *err)
{
	struct buf data = BUF_INIT;
	int ret = -1;

	elf_ldcache_release(c);
	if (buf_read_file(&data, path)) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (elf_ldcache_parse(c, data.buf, data.len, err)) {
		buf_addf(err, " ('%s')", path);
		goto out;
	}
	ret = 0;
out:
	buf_release(&data);
	return ret;
}

void elf_tree_init(struct elf_tree *t)
{
	memset(t, 0, sizeof(*t));
	strvec_init(&t->warnings);
}

void elf_tree_release(struct elf_tree *t)
{
	size_t i;

	for (i = 0; i < t->nr; i++) {
		free(t->libs[i].name);
		free(t->libs[i].path);
		free(t->libs[i].error);
	}
	free(t->libs);
	strvec_clear(&t->warnings);
	elf_tree_init(t);
}

void elf_tree_totals(const struct elf_tree *t, bool include_root, struct elf_totals *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = include_root ? 0 : 1; i < t->nr; i++) {
		const struct elf_lib *l = &t->libs[i];

		if (l->preloaded)
			continue;
		if (!l->facts) {
			out->missing++;
			continue;
		}
		out->objects++;
		out->file_bytes += l->facts->file_size;
		out->mapped_bytes = add_sat(out->mapped_bytes, l->facts->load_memsz);
		out->relocs += l->facts->nr_relocs;
		out->dynsyms += l->facts->nr_dynsyms;
	}
}

void elf_tree_to_json(const struct elf_tree *t, struct buf *out)
{
	size_t i;

	buf_addch(out, '[');
	for (i = 0; i < t->nr; i++) {
		const struct elf_lib *l = &t->libs[i];
		bool first = true;

		if (i)
			buf_addch(out, ',');
		buf_addch(out, '{');
		json_str_field(out, "name", l->name, &first);
		json_str_field(out, "path", l->path, &first);
		json_str_field(out, "how", l->how, &first);
		json_int_field(out, "parent", l->parent, &first);
		json_int_field(out, "depth", l->depth, &first);
		json_bool_field(out, "preloaded", l->preloaded, &first);
		json_str_field(out, "error", l->error, &first);
		buf_adds(out, ",\"facts\":");
		if (l->facts && !l->preloaded)
			elf_facts_to_json(l->facts, out);
		else
			buf_adds(out, "null");
		buf_addch(out, '}');
	}
	buf_addch(out, ']');
}

void elf_resolver_init(struct elf_resolver *r)
{
	const char *llp = getenv("LD_LIBRARY_PATH");

	memset(r, 0, sizeof(*r));
	strvec_init(&r->ld_library_path);
	if (llp && *llp)
		strvec_push(&r->ld_library_path, llp);
	r->ldcache_path = xstrdup("/etc/ld.so.cache");
	elf_ldcache_init(&r->ldcache);
}

void elf_resolver_unload(struct elf_resolver *r)
{
	size_t i;

	for (i = 0; i < r->nr_loaded; i++) {
		free(r->loaded[i].name);
		free(r->loaded[i].path);
	}
	r->nr_loaded = 0;
}

void elf_resolver_release(struct elf_resolver *r)
{
	size_t i;

	elf_resolver_unload(r);
	free(r->loaded);
	for (i = 0; i < r->nr_cached; i++)
		cached_free(&r->cached[i]);
	free(r->cached);
	strvec_clear(&r->ld_library_path);
	free(r->ldcache_path);
	free(r->sysroot);
	elf_ldcache_release(&r->ldcache);
	memset(r, 0, sizeof(*r));
}

const struct elf_facts *elf_resolver_inspect(struct elf_resolver *r, const char *path,
					     struct buf *err)
{
	long idx = resolver_lookup(r, path, err);

	if (idx == -1) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	return idx < 0 ? NULL : r->cached[idx].facts;
}

int elf_resolve(struct elf_resolver *r, const char *path, struct elf_tree *out, struct buf *err)
{
	struct buf abs = BUF_INIT;
	const struct elf_facts *f;
	struct elf_lib *root;
	long ci, li;
	size_t i, j;
	int ret = -1;

	elf_tree_release(out);
	f = elf_resolver_inspect(r, path, err);
	if (!f)
		goto out;
	ci = resolver_lookup(r, path, err);
	if (ci < 0) {
		/* Removed or replaced since it was read a moment ago. */
		if (!err->len)
			buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	/* $ORIGIN of the root: its directory as given, made absolute, symlinks kept. */
	if (path[0] != '/') {
		char *cwd = getcwd(NULL, 0);

		if (cwd)
			buf_addf(&abs, "%s/", cwd);
		free(cwd);
	}
	buf_adds(&abs, path);
	root = tree_add(out, path, -1);
	root->path = xstrdup(abs.buf);
	root->how = "root";
	root->facts = f;
	li = loaded_by_cached(r, (size_t)ci);
	if (li < 0)
		loaded_add(r, (size_t)ci, path, abs.buf);
	/* Breadth first, as _dl_map_object_deps does; out->nr grows as we go. */
	for (i = 0; i < out->nr; i++) {
		const struct elf_facts *lf = out->libs[i].facts;

		if (!lf || out->libs[i].preloaded)
			continue;
		if (out->libs[i].depth >= ELF_MAX_DEPTH) {
			tree_warn(out, "'%s' is %d levels deep; its needs are not followed",
				  out->libs[i].name, ELF_MAX_DEPTH);
			continue;
		}
		for (j = 0; j < lf->needed.nr; j++)
			resolve_needed(r, out, (int)i, lf->needed.v[j]);
	}
	ret = 0;
out:
	buf_release(&abs);
	return ret;
}

void elf_python_init(struct elf_python *py)
{
	memset(py, 0, sizeof(*py));
}

void elf_python_release(struct elf_python *py)
{
	free(py->exe);
	free(py->libpython);
	free(py->version);
	elf_python_init(py);
}

int elf_python_inspect(struct elf_resolver *r, const char *path, struct elf_python *py,
		       struct buf *err)
{
	struct elf_tree t;
	char *real = NULL;
	const struct elf_facts *f;
	size_t i;
	int ret = -1;

	elf_tree_init(&t);
	elf_python_release(py);
	real = strchr(path, '/') ? realpath(path, NULL) : path_lookup(path);
	if (!real) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (elf_resolve(r, real, &t, err))
		goto out;
	f = t.libs[0].facts;
	if (f->type != ET_EXEC && f->type != ET_DYN) {
		buf_addf(err, "'%s' is not an ELF executable", real);
		goto out;
	}
	py->exe = real;
	real = NULL;
	py->exe_facts = f;
	if (f->libpython) {
		py->shared = true;
		for (i = 1; i < t.nr; i++)
			if (!strcmp(t.libs[i].name, f->libpython) && t.libs[i].facts) {
				py->libpython = realpath(t.libs[i].path, NULL);
				py->lib_facts = t.libs[i].facts;
			}
		if (py->lib_facts && py->lib_facts->py_version)
			py->version = xstrdup(py->lib_facts->py_version);
		else
			python_version_from_soname(f->libpython, py);
	} else if (f->py_version) {
		py->version = xstrdup(f->py_version);
	}
	ret = 0;
out:
	free(real);
	elf_tree_release(&t);
	if (ret)
		elf_python_release(py);
	return ret;
}

void elf_python_to_json(const struct elf_python *py, struct buf *out)
{
	bool first = true;

	buf_addch(out, '{');
	json_str_field(out, "exe", py->exe, &first);
	json_bool_field(out, "shared", py->shared, &first);
	json_str_field(out, "libpython", py->libpython, &first);
	json_str_field(out, "version", py->version, &first);
	json_bool_field(out, "static", !py->shared && py->exe_facts && py->exe_facts->defines_python,
			&first);
	buf_adds(out, ",\"exe_facts\":");
	if (py->exe_facts)
		elf_facts_to_json(py->exe_facts, out);
	else
		buf_adds(out, "null");
	buf_adds(out, ",\"libpython_facts\":");
	if (py->lib_facts)
		elf_facts_to_json(py->lib_facts, out);
	else
		buf_adds(out, "null");
	buf_addch(out, '}');
}
