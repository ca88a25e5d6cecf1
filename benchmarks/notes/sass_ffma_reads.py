"""Register-file reads of the FFMAs in each kernel of a `cuobjdump -sass` listing.

A source operand is served by the operand reuse cache when the instruction before it had the
same register in the same slot marked `.reuse`; every other register source is a register-file
read. For the FFMA block of each kernel (first to last FFMA) this prints how many FFMAs read 3,
2 and 1 sources from the register file, and how many read 2 or 3 from one bank (register index
parity). H100, ffma_operand_probe.cu (single-channel notes, round 23): the single-channel item's
FFMA shapes, 27-46% of them reading three registers, issued at ~76% of the FMA peak; a stream
whose consecutive FFMAs share both multiplicands (3%) at 95%; a build with 70% such FFMAs at 61%.

  cuobjdump -sass BINARY | python3 sass_ffma_reads.py [REGEX]   (kernels whose name matches)
"""
import collections
import re
import sys

INSTR = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
REG = re.compile(r"R\d+")


def kernels(lines):
    """{mangled name: [instruction text]} in listing order."""
    out, cur = collections.OrderedDict(), None
    for line in lines:
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = INSTR.match(line)
        if m and cur is not None:
            out_text = m.group(2)
            cur.append(out_text.split(None, 1)[1] if out_text.startswith("@") else out_text)
    return out


def sources(instr):
    """(opcode, source operands as written, .reuse suffixes kept)."""
    parts = instr.split(None, 1)
    ops = [o.strip() for o in parts[1].split(",")] if len(parts) > 1 else []
    return parts[0], ops[1:]


def ffma_reads(instrs):
    """Counter of rf0..rf3 (register-file reads per FFMA) and same_bank, or None without FFMAs."""
    idx = [i for i, x in enumerate(instrs) if x.startswith("FFMA")]
    if not idx:
        return None
    counts, prev = collections.Counter(), []
    for instr in instrs[idx[0]:idx[-1] + 1]:
        op, src = sources(instr)
        if op.startswith("FFMA"):
            reads = []
            for slot, operand in enumerate(src):
                reg = operand.split(".")[0]
                if not REG.fullmatch(reg):
                    continue  # immediate, constant bank, uniform register, RZ
                if slot < len(prev) and prev[slot] == reg + ".reuse":
                    continue  # served by the reuse cache
                reads.append(int(reg[1:]))
            counts["rf%d" % len(reads)] += 1
            if len(reads) >= 2 and len({r % 2 for r in reads}) < len(reads):
                counts["same_bank"] += 1
        prev = src
    return counts


def main(argv):
    pattern = re.compile(argv[1]) if len(argv) > 1 else None
    for name, instrs in kernels(sys.stdin).items():
        if pattern and not pattern.search(name):
            continue
        c = ffma_reads(instrs)
        if not c:
            continue
        n = sum(c["rf%d" % k] for k in range(4))
        print("%6d FFMA  3 reads %5.1f%%  2 reads %5.1f%%  <=1 read %5.1f%%  same bank %5.1f%%  %s" % (
            n, 100 * c["rf3"] / n, 100 * c["rf2"] / n, 100 * (c["rf1"] + c["rf0"]) / n,
            100 * c["same_bank"] / n, name))


if __name__ == "__main__":
    main(sys.argv)
