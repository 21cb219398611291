#!/usr/bin/env python3
"""cubin_text_compare.py — do two cubins hold the same machine code per kernel? (a tool)

    tools/cubin_text_compare.py OLD.cubin NEW.cubin --map MAPFILE [--ptxas OLD.log NEW.log]
    tools/cubin_text_compare.py CUBIN --list

Compares, for every kernel named in MAPFILE, the instruction bytes of its `.text.<kernel>` section
in OLD with those of the mapped kernel in NEW, with no disassembler (the development machine has
no cuobjdump): the sections are read straight from the ELF files. A refactoring that renames
kernels or templates changes the mangled names but, when it changes no code, not one instruction
byte. Also compared per kernel: the register count, frame size and stack size ptxas recorded
(attributes EIATTR_REGCOUNT, _FRAME_SIZE and _MIN_STACK_SIZE of the file's .nv.info), the size of the kernel's parameter bank (.nv.constant0.<kernel>) and its
static shared memory (.nv.shared.<kernel>), and the relocations into its text (offset, type and
the symbol's name after mapping). Relocation sites are masked (the 16-byte instruction that holds
one) before the bytes are compared, so that a renamed symbol alone cannot differ; the relocation
lists themselves must still match. With --ptxas, the `-Xptxas -v` reports of the two builds are
compared kernel by kernel as well (stack frame, spills, registers, barriers, shared memory).

MAPFILE: one kernel per line, `OLD_MANGLED NEW_MANGLED` (or one name: unchanged); `#` starts a
comment. Every mapped kernel must exist in both files. tools/fused_kernel_names.map maps the 26
fused kernels from their names before the move to optimized/gpu/fused/ to their names after it.
Build each side's cubin with the same command, e.g.
    nvcc -cubin -O3 -DNDEBUG -DNVFP4_HAVE_CUDA=1 -gencode=arch=compute_90a,code=sm_90a \
         --expt-relaxed-constexpr -std=c++17 -Ioptimized -Ireference -Xptxas -v \
         optimized/gpu/fused/fused.cu -o new.cubin 2> new.log

Exit status: 0 every mapped kernel is identical, 1 some differ (or are missing), 2 bad usage.
"""
import argparse
import re
import struct
import sys


class Elf:
    """The section table, symbol table and relocations of a 64-bit little-endian ELF file."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1:
            raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
        shoff, = struct.unpack_from("<Q", d, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
        self.sections = []
        for i in range(shnum):
            name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", d, shoff + i * shentsize)
            self.sections.append(dict(name_off=name, type=typ, off=off, size=size, link=link,
                                      info=info, entsize=entsize))
        strtab = self.sections[shstrndx]
        for s in self.sections:
            s["name"] = self._str(strtab, s["name_off"])
        self.by_name = {s["name"]: i for i, s in enumerate(self.sections)}
        self.symbols = []
        for s in self.sections:
            if s["type"] == 2:  # SHT_SYMTAB
                names = self.sections[s["link"]]
                for k in range(s["size"] // 24):
                    nm, info, other, shndx, value, size = struct.unpack_from(
                        "<IBBHQQ", d, s["off"] + 24 * k)
                    self.symbols.append(self._str(names, nm))

    def _str(self, sec, off):
        start = sec["off"] + off
        end = self.data.index(b"\0", start)
        return self.data[start:end].decode("ascii", "replace")

    def section(self, name):
        i = self.by_name.get(name)
        return None if i is None else self.sections[i]

    def bytes_of(self, name):
        s = self.section(name)
        return None if s is None else self.data[s["off"] : s["off"] + s["size"]]

    def relocations(self, text_name):
        """[(offset, type, symbol name)] of the REL/RELA sections that apply to `text_name`."""
        target = self.by_name.get(text_name)
        out = []
        for s in self.sections:
            if s["type"] not in (4, 9) or s["info"] != target:  # SHT_RELA, SHT_REL
                continue
            ent = 24 if s["type"] == 4 else 16
            for k in range(s["size"] // ent):
                off, info = struct.unpack_from("<QQ", self.data, s["off"] + ent * k)
                sym, typ = info >> 32, info & 0xFFFFFFFF
                out.append((off, typ, self.symbols[sym] if sym < len(self.symbols) else f"#{sym}"))
        return sorted(out)

    def info_attributes(self):
        """{(attribute, symbol name): value} of the global .nv.info section's symbol-valued
        attributes (format EIFMT_SVAL with an 8-byte payload: symbol index, value)."""
        b = self.bytes_of(".nv.info") or b""
        out, i = {}, 0
        while i + 2 <= len(b):
            fmt, attr = b[i], b[i + 1]
            if fmt == 4:  # EIFMT_SVAL: u16 size, payload
                size, = struct.unpack_from("<H", b, i + 2)
                if size == 8:
                    sym, val = struct.unpack_from("<II", b, i + 4)
                    out[(attr, self.symbols[sym] if sym < len(self.symbols) else f"#{sym}")] = val
                i += 4 + size
            elif fmt in (2, 3):  # EIFMT_BVAL, EIFMT_HVAL
                i += 4
            elif fmt == 1:  # EIFMT_NVAL
                i += 2
            else:
                raise ValueError(f".nv.info: unknown attribute format {fmt}")
        return out

    def kernels(self):
        return sorted(s["name"][len(".text."):] for s in self.sections
                      if s["name"].startswith(".text."))


EIATTR_REGCOUNT, EIATTR_FRAME_SIZE, EIATTR_MIN_STACK_SIZE = 0x2F, 0x11, 0x12


def kernel_facts(elf, info, name):
    text = elf.section(".text." + name)
    if text is None:
        return None
    code = bytearray(elf.bytes_of(".text." + name))
    relocs = elf.relocations(".text." + name)
    for off, _, _ in relocs:  # mask the instruction (16 bytes on sm_90) that holds a relocation
        base = off - off % 16
        code[base : base + 16] = bytes(16)
    const0 = elf.section(".nv.constant0." + name)
    shared = elf.section(".nv.shared." + name)
    return dict(code=bytes(code), size=text["size"], relocs=relocs,
                regs=info.get((EIATTR_REGCOUNT, name)), frame=info.get((EIATTR_FRAME_SIZE, name)),
                stack=info.get((EIATTR_MIN_STACK_SIZE, name)),
                params=const0["size"] if const0 else 0, shared=shared["size"] if shared else 0)


PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
PTXAS_FACTS = re.compile(r"stack frame|spill|Used \d+ registers|bytes smem|bytes cmem")


def ptxas_reports(path):
    """{kernel: [the report's lines on its frame, spills, registers, barriers, memory]}"""
    out, cur = {}, None
    with open(path) as f:
        for line in f:
            m = PTXAS_ENTRY.search(line)
            if m:
                cur = m.group(1)
                out[cur] = []
                continue
            if cur is not None and PTXAS_FACTS.search(line):
                out[cur].append(line.strip().replace("ptxas info    : ", ""))
    return out


def read_map(path):
    pairs = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) > 2:
                raise ValueError(f"{path}: bad line {' '.join(line)}")
            pairs.append((line[0], line[-1]))
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new", nargs="?")
    ap.add_argument("--map")
    ap.add_argument("--ptxas", nargs=2, metavar=("OLD_LOG", "NEW_LOG"))
    ap.add_argument("--list", action="store_true", help="list the kernels of OLD and exit")
    args = ap.parse_args()
    if args.list:
        for k in Elf(args.old).kernels():
            print(k)
        return 0
    if not args.new or not args.map:
        ap.error("OLD, NEW and --map are required (or CUBIN --list)")
    old, new = Elf(args.old), Elf(args.new)
    old_info, new_info = old.info_attributes(), new.info_attributes()
    pairs = read_map(args.map)
    newname = dict(pairs)
    logs = [ptxas_reports(p) for p in args.ptxas] if args.ptxas else None
    bad = 0
    for o, n in pairs:
        a, b = kernel_facts(old, old_info, o), kernel_facts(new, new_info, n)
        problems = []
        if a is None:
            problems.append("missing in OLD")
        if b is None:
            problems.append("missing in NEW")
        if a and b:
            if a["size"] != b["size"]:
                problems.append(f"text size {a['size']} -> {b['size']}")
            elif a["code"] != b["code"]:
                first = next(i for i in range(a["size"]) if a["code"][i] != b["code"][i])
                problems.append(f"text differs from byte {first:#x} (instruction {first // 16})")
            for key in ("regs", "frame", "stack", "params", "shared"):
                if a[key] != b[key]:
                    problems.append(f"{key} {a[key]} -> {b[key]}")
            ra = [(off, typ, newname.get(sym, sym)) for off, typ, sym in a["relocs"]]
            if ra != b["relocs"]:
                problems.append(f"relocations differ ({len(ra)} vs {len(b['relocs'])})")
        if logs:
            la, lb = logs[0].get(o), logs[1].get(n)
            if la is None or lb is None:
                problems.append("missing in a ptxas report")
            elif la != lb:
                problems.append("ptxas report differs: " + " | ".join(la) + " -> " + " | ".join(lb))
        if a and not problems:
            report = (" | " + "; ".join(logs[0][o])) if logs else ""
            print(f"same  {a['size']:7d} bytes {a['regs']:3d} regs {len(a['relocs'])} relocs  "
                  f"{n}{report}")
        else:
            bad += 1
            print(f"DIFF  {n}: {'; '.join(problems)}")
    print(f"cubin_text_compare: {len(pairs)} kernels, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
