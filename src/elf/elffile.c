/*
 * ELF facts through libelf: what one file says about itself (segments, the
 * dynamic section, relocations, symbols, debug info, build-id, the Python it
 * holds).  Everything a file says is bounds-checked here before it is used:
 * see elffile.h for the contract.
 */
#include "elf/elffile.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/pyversion.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

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

static void facts_warn(struct elf_facts *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
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
	elf_sanitize(msg.buf, msg.len);
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
	elf_sanitize(copy, len);
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

static void read_dynamic(struct elf_facts *f, Elf_Data *data, size_t entsize, const struct strsrc *src,
			 struct dyninfo *info)
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
				facts_warn(f, "more than %d DT_NEEDED entries; the rest are ignored", ELF_MAX_NEEDED);
			break;
		case DT_SONAME: soname = (int64_t)(d.d_un.d_val & INT64_MAX); break;
		case DT_RPATH: rpath = (int64_t)(d.d_un.d_val & INT64_MAX); break;
		case DT_RUNPATH: runpath = (int64_t)(d.d_un.d_val & INT64_MAX); break;
		case DT_RELACOUNT:
		case DT_RELCOUNT: f->nr_relative = d.d_un.d_val > SIZE_MAX / 2 ? SIZE_MAX / 2 : d.d_un.d_val; break;
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
			facts_warn(f, "DT_NEEDED string offset %zu is outside the string table", needed_off[i]);
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
#define DYNSTR(field, off, what)                                                                                       \
	if ((off) >= 0) {                                                                                              \
		const char *s_ = strsrc_get(src, (uint64_t)(off));                                                     \
		if (s_)                                                                                                \
			f->field = file_string(f, s_, what);                                                           \
		else                                                                                                   \
			facts_warn(f, what " string offset is outside the string table");                              \
	}
	DYNSTR(soname, soname, "DT_SONAME");
	DYNSTR(rpath, rpath, "DT_RPATH");
	DYNSTR(runpath, runpath, "DT_RUNPATH");
#undef DYNSTR
}

static void read_dynamic_section(struct elf_facts *f, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, size_t shnum)
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
static bool vaddr_to_offset(Elf *e, size_t phnum, uint64_t addr, uint64_t len, size_t size, uint64_t *off)
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
	if (!info.strtab || !info.strsz || !vaddr_to_offset(e, phnum, info.strtab, info.strsz, size, &stroff) ||
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
static void read_symbols(struct elf_facts *f, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, size_t shnum, size_t count)
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
	while (off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (next <= off)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && in_file(name_off, 4, data->d_size) &&
		    in_file(desc_off, nh.n_descsz, data->d_size) &&
		    !memcmp((const char *)data->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0 && nh.n_descsz <= 64) {
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
static bool read_sections(struct elf_facts *f, Elf *e, size_t size, size_t shnum, size_t shstrndx)
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
			facts_warn(f, "section %zu ('%.64s') lies beyond the end of the file", elf_ndxscn(scn), name);
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
			f->symtab_bytes = elf_add_sat(f->symtab_bytes, sh.sh_size);
			if (sh.sh_link && sh.sh_link < shnum && (strscn = elf_getscn(e, sh.sh_link)) &&
			    gelf_getshdr(strscn, &str) && str.sh_type == SHT_STRTAB)
				f->symtab_bytes = elf_add_sat(f->symtab_bytes, str.sh_size);
			symtab = scn;
			symtab_sh = sh;
			break;
		}
		case SHT_NOTE: read_build_id(f, scn); break;
		}
		if (starts_with(name, ".debug") || starts_with(name, ".zdebug")) {
			f->nr_debug_sections++;
			if (sh.sh_type != SHT_NOBITS)
				f->debug_bytes = elf_add_sat(f->debug_bytes, sh.sh_size);
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
			f->py_version = pyversion_find(d->d_buf, d->d_size, f->soname);
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
			f->load_filesz = elf_add_sat(f->load_filesz, ph.p_filesz);
			f->load_memsz = elf_add_sat(f->load_memsz, ph.p_memsz);
			if (!in_file(ph.p_offset, ph.p_filesz, size))
				facts_warn(f, "segment %zu lies beyond the end of the file", i);
		} else if (ph.p_type == PT_INTERP && !f->interp) {
			const char *s;
			Elf_Data *d;

			if (!in_file(ph.p_offset, ph.p_filesz, size) || !ph.p_filesz || ph.p_filesz > ELF_MAX_STRING) {
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

static int inspect_elf(Elf *e, size_t size, struct elf_facts *f, const char *name, struct buf *err)
{
	GElf_Ehdr eh;
	size_t shnum = 0, phnum = 0, shstrndx = 0;
	int cls;

	switch (elf_kind(e)) {
	case ELF_K_ELF: break;
	case ELF_K_AR: buf_addf(err, "cannot read '%s': an ar archive, not a shared object", name); return -1;
	default: buf_addf(err, "cannot read '%s': not an ELF file", name); return -1;
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
		buf_addf(err, "cannot read '%s': bad section or program header table: %s", name, elf_errmsg(-1));
		return -1;
	}
	if (shnum) {
		size_t es = gelf_fsize(e, ELF_T_SHDR, 1, EV_CURRENT);

		if (eh.e_shentsize != es) {
			buf_addf(err, "cannot read '%s': section header size %u, expected %zu", name, eh.e_shentsize,
				 es);
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
			buf_addf(err, "cannot read '%s': program header size %u, expected %zu", name, eh.e_phentsize,
				 es);
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
		facts_warn(f,
			   "section header table unreadable (%u entries at offset %llu); using "
			   "program headers",
			   eh.e_shnum, (unsigned long long)eh.e_shoff);
	if (!(shnum && read_sections(f, e, size, shnum, shstrndx)))
		read_pt_dynamic(f, e, size, phnum);
	return 0;
}

static const struct {
	unsigned machine;
	const char *name;
} machine_names[] = {
	{ EM_X86_64, "x86-64" },   { EM_386, "i386" },	 { EM_AARCH64, "AArch64" }, { EM_ARM, "ARM" },
	{ EM_PPC64, "PowerPC64" }, { EM_S390, "S/390" }, { EM_RISCV, "RISC-V" },
};

void elf_facts_init(struct elf_facts *f)
{
	memset(f, 0, sizeof(*f));
	strvec_init(&f->needed);
	strvec_init(&f->warnings);
}

void elf_sanitize(char *s, size_t len)
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
		if (n == 3 &&
		    ((c == 0xe0 && (unsigned char)s[i + 1] < 0xa0) || (c == 0xed && (unsigned char)s[i + 1] >= 0xa0)))
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

void elf_facts_list_release(struct elf_facts_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++) {
		elf_facts_release(l->v[i]);
		free(l->v[i]);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
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

int elf_inspect_mem(const char *name, const void *data, size_t size, struct elf_facts *out, struct buf *err)
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
		buf_addf(err, "cannot read '%s': not an ELF file (%lld bytes)", path, (long long)st.st_size);
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
	return elf_add_sat(f->symtab_bytes, f->debug_bytes);
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
