#!/usr/bin/env python3
# Writes a seed for torch_state_fuzz: a state dict {weight [2, 3], bias [2]} of float32 laid out as
# torch.save writes it (a stored zip: archive/data.pkl, a protocol-2 pickle of an OrderedDict of
# torch._utils._rebuild_tensor_v2 calls on persistent storages; archive/data/<key>; byteorder;
# version), with the standard library only (no torch on CI). Usage: make_torch_seed.py OUT_FILE
# torch_save_bytes() is also what tests/python/test_readouts.py writes BGE-M3's heads with.
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


def torch_save_bytes(path, tensors):
    """Writes {name: (shape, float values)} (in order) to `path` as torch.save's zip."""
    pickle = b"\x80\x02ccollections\nOrderedDict\n)R("
    for i, (name, (shape, _)) in enumerate(tensors.items()):
        pickle += unicode(name) + tensor(str(i), list(shape))
    pickle += b"u."
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle)
        for i, (_, (_, values)) in enumerate(tensors.items()):
            z.writestr(f"archive/data/{i}", struct.pack(f"<{len(values)}f", *values))
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")


if __name__ == "__main__":
    torch_save_bytes(sys.argv[1], {"weight": ([2, 3], [0.5, -1.25, 2.0, 0.0, 3.5, -0.75]), "bias": ([2], [0.125, -0.5])})
