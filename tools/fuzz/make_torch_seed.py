#!/usr/bin/env python3
# Writes a seed for torch_state_fuzz: a state dict {weight [2, 3], bias [2]} of float32 laid out as
# torch.save writes it (a stored zip: archive/data.pkl, a protocol-2 pickle of an OrderedDict of
# torch._utils._rebuild_tensor_v2 calls on persistent storages; archive/data/<key>; byteorder;
# version), with the standard library only (no torch on CI). Usage: make_torch_seed.py OUT_FILE
import struct
import sys
import zipfile


def unicode(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def integer(v):
    return b"J" + struct.pack("<i", v)


def tensor(key, shape):
    numel = 1
    for d in shape:
        numel *= d
    strides, step = [], 1
    for d in reversed(shape):
        strides.insert(0, step)
        step *= d
    return (b"ctorch._utils\n_rebuild_tensor_v2\n((" + unicode("storage") + b"ctorch\nFloatStorage\n" + unicode(key)
            + unicode("cpu") + integer(numel) + b"tQ" + integer(0) + b"(" + b"".join(integer(d) for d in shape) + b"t("
            + b"".join(integer(s) for s in strides) + b"t\x89ccollections\nOrderedDict\n)RtR")


pickle = (b"\x80\x02ccollections\nOrderedDict\n)R(" + unicode("weight") + tensor("0", [2, 3]) + unicode("bias")
          + tensor("1", [2]) + b"u.")
with zipfile.ZipFile(sys.argv[1], "w", compression=zipfile.ZIP_STORED) as z:
    z.writestr("archive/data.pkl", pickle)
    z.writestr("archive/data/0", struct.pack("<6f", 0.5, -1.25, 2.0, 0.0, 3.5, -0.75))
    z.writestr("archive/data/1", struct.pack("<2f", 0.125, -0.5))
    z.writestr("archive/byteorder", "little")
    z.writestr("archive/version", "3\n")
