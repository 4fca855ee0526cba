"""A Llama-architecture decoder with random weights, for timing forward passes.

The decoder has the dimensions of a :class:`specsim.describe.models.ModelShape` and the
structure of Llama / Qwen2 / Mistral: token embedding, per layer RMSNorm ->
fused QKV projection (with biases for Qwen2) -> rotary embeddings ->
grouped-query attention over a preallocated KV cache -> output projection ->
residual, RMSNorm -> fused gate/up projection -> SiLU(gate) * up -> down
projection -> residual; a final RMSNorm and the LM head (tied or untied).
Weights are random (nothing is downloaded): timing does not depend on them.

The KV cache holds ``capacity`` positions for each of ``batch`` sequences and
a length per sequence.  A forward pass of q new tokens per sequence writes
their K and V at positions ``lengths .. lengths + q - 1`` and attends to
everything before; rolling back rejected draft tokens is just not advancing
a sequence's length (the stale entries are masked and later overwritten), as
paged engines do with their slot tables.

The cache is laid out (layer, sequence, KV head, position, head_dim), so that
attention reads each head's keys contiguously, as engines' paged caches do.

Two passes compute the same logits (a test holds them together on the CPU):

``engine`` (the default)  what an engine runs: PyTorch's fused RMSNorm, grouped-query
    attention by SDPA's ``enable_gqa`` (K and V never repeated), no dense mask when the
    batch shares one length (none at q = 1; at q > 1 a lower-right causal bias, which
    SDPA hands to its flash or memory-efficient kernel without building a mask), and
    optionally each layer compiled (``compile=True``: ``torch.compile`` fuses the
    element-wise work: norms, rotary, SiLU * up, residuals).  Sequences at different
    lengths (a speculative loop's) still need a mask: engines use variable-length
    kernels there, which PyTorch does not expose.
``reference``  the plain formulation kept to check it: RMSNorm in fp32 by hand and the
    ``group`` query heads of a KV head folded into the query axis under a dense mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specsim.describe.models import ModelShape

__all__ = ["DecoderTimingModel", "PASS_KINDS", "TORCH_DTYPES", "shared_length_mask"]

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
PASS_KINDS = ("engine", "reference")


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + eps)).to(x.dtype) * weight


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, half-split convention (Llama in Hugging Face)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def shared_length_mask(q: int, span: int):
    """The engine pass's mask when every sequence has one length: none at q = 1, else a lower-right causal bias
    (the q new tokens see the cache and each other causally; SDPA needs no dense mask for it)."""
    if q == 1:
        return None
    # Imported here, not with the module: torch.nn.attention.bias imports torch._dynamo (it registers functions with
    # it), 1 s of CPU on the development machine, as much as torch itself, which every import of this module paid
    # (each test worker's collection, a decode-only measurement).
    from torch.nn.attention.bias import causal_lower_right

    return causal_lower_right(q, span)


class DecoderTimingModel(torch.nn.Module):
    """Random-weight decoder; :meth:`allocate` gives it a KV cache for a batch."""

    def __init__(
        self,
        shape: ModelShape,
        dtype: str = "bf16",
        device: str = "cpu",
        seed: int = 0,
        rope_theta: float = 500000.0,
        kind: str = "engine",
        compile: bool = False,
    ) -> None:
        super().__init__()
        if dtype not in TORCH_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(TORCH_DTYPES)}, got {dtype!r}")
        if kind not in PASS_KINDS:
            raise ValueError(f"pass kind must be one of {', '.join(PASS_KINDS)}, got {kind!r}")
        self.shape, self.kind = shape, kind
        self.batch, self.capacity = 0, 0
        self.k_cache = self.v_cache = None
        self.dtype, self.device = TORCH_DTYPES[dtype], torch.device(device)
        d, hd = shape.hidden_size, shape.head_dim
        self.n_heads, self.n_kv, self.head_dim = shape.n_heads, shape.n_kv_heads, hd
        self.group = shape.n_heads // shape.n_kv_heads
        gen = torch.Generator(device=self.device).manual_seed(seed)

        def param(*size: int) -> torch.nn.Parameter:
            t = torch.empty(size, dtype=self.dtype, device=self.device).normal_(0.0, 0.02, generator=gen)
            return torch.nn.Parameter(t, requires_grad=False)

        def ones(n: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.ones(n, dtype=self.dtype, device=self.device), requires_grad=False)

        qkv_out = (self.n_heads + 2 * self.n_kv) * hd
        self.embed = param(shape.vocab_size, d)
        self.layers = torch.nn.ModuleList()
        for _ in range(shape.n_layers):
            layer = torch.nn.Module()
            layer.attn_norm = ones(d)
            layer.wqkv = param(qkv_out, d)
            layer.bqkv = param(qkv_out) if shape.qkv_bias else None
            layer.wo = param(d, self.n_heads * hd)
            layer.mlp_norm = ones(d)
            layer.w_gate_up = param(2 * shape.intermediate_size, d)
            layer.w_down = param(d, shape.intermediate_size)
            self.layers.append(layer)
        self.final_norm = ones(d)
        self.lm_head = self.embed if shape.tie_embeddings else param(shape.vocab_size, d)
        self.inv_freq = 1.0 / (rope_theta ** (torch.arange(0, hd, 2, device=self.device, dtype=torch.float32) / hd))
        self._layer = torch.compile(self._layer_pass, dynamic=True) if compile else self._layer_pass

    def allocate(self, batch: int, capacity: int) -> None:
        """(Re)allocate the KV cache for ``batch`` sequences of up to ``capacity`` tokens."""
        self.k_cache = self.v_cache = None  # free the old cache first
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        shape = (self.shape.n_layers, batch, self.n_kv, capacity, self.head_dim)
        self.k_cache = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.v_cache = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.batch, self.capacity = batch, capacity

    def cache_bytes(self, batch: int, capacity: int) -> int:
        """Bytes :meth:`allocate` would take."""
        element = torch.tensor([], dtype=self.dtype).element_size()
        return 2 * self.shape.n_layers * batch * capacity * self.n_kv * self.head_dim * element

    def parameter_count(self) -> int:
        """Parameters held (a tied head counted once); equals ``shape.params``."""
        return sum(p.numel() for p in {id(p): p for p in self.parameters()}.values())

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if self.kind == "engine":
            return F.rms_norm(x, (x.shape[-1],), weight, 1e-5)
        return _rms_norm(x, weight)

    def _mask(self, positions: torch.Tensor, span: int, uniform: bool):
        """The attention mask of a pass: None or a lower-right causal bias where the engine pass needs no dense one."""
        b, q = positions.shape
        if uniform and (q == 1 or self.kind == "engine"):
            return shared_length_mask(q, span)
        rows_m = positions[:1] if uniform else positions  # uniform: one mask row set broadcasts over the batch
        visible = torch.arange(span, device=self.device)[None, None, :] <= rows_m[:, :, None]  # (b or 1, q, span)
        if self.kind == "engine":
            return visible[:, None]  # (b, 1, q, span), broadcast over heads
        # Key s is visible to the query at position p iff s <= p; queries of one KV head are folded as (group, q).
        return (
            visible[:, None, None].expand(-1, 1, self.group, q, span).reshape(visible.shape[0], 1, self.group * q, span)
        )

    def _attend(self, qh: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask) -> torch.Tensor:
        b, q = qh.shape[:2]
        if self.kind == "engine":
            attn = F.scaled_dot_product_attention(qh.transpose(1, 2), keys, values, attn_mask=mask, enable_gqa=True)
            return attn.transpose(1, 2).reshape(b, q, -1)
        queries = qh.view(b, q, self.n_kv, self.group, self.head_dim).permute(0, 2, 3, 1, 4)
        queries = queries.reshape(b, self.n_kv, self.group * q, self.head_dim)
        attn = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
        return attn.view(b, self.n_kv, self.group, q, self.head_dim).permute(0, 3, 1, 2, 4).reshape(b, q, -1)

    def _layer_pass(self, index: int, x, cos, sin, rows, positions, span: int, mask):
        """One decoder layer of a pass: x (b, q, d) in, x out; writes the layer's K and V into the cache."""
        layer = self.layers[index]
        b, q = x.shape[:2]
        hd = self.head_dim
        h = self._norm(x, layer.attn_norm)
        qkv = F.linear(h, layer.wqkv, layer.bqkv)
        qh, kh, vh = qkv.split([self.n_heads * hd, self.n_kv * hd, self.n_kv * hd], dim=-1)
        qh = _rotate(qh.view(b, q, self.n_heads, hd), cos, sin)
        kh = _rotate(kh.view(b, q, self.n_kv, hd), cos, sin)
        self.k_cache[index, rows, :, positions] = kh  # (b, q, n_kv, hd) into (layer, seq, head, position, hd)
        self.v_cache[index, rows, :, positions] = vh.view(b, q, self.n_kv, hd)
        keys = self.k_cache[index, :b, :, :span]  # (b, n_kv, span, hd): each head's keys contiguous
        values = self.v_cache[index, :b, :, :span]
        x = x + F.linear(self._attend(qh, keys, values, mask), layer.wo)
        h = self._norm(x, layer.mlp_norm)
        gate, up = F.linear(h, layer.w_gate_up).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, layer.w_down)

    @torch.inference_mode()
    def forward(
        self, tokens: torch.Tensor, lengths: torch.Tensor, span: int | None = None, uniform: bool = False
    ) -> torch.Tensor:
        """Logits for ``tokens`` (b, q) appended at positions ``lengths`` (b,) of each sequence.

        ``span`` (keys attended, max(lengths) + q) may be given by a caller
        that knows it, so that the pass has no host synchronisation and can be
        captured in a CUDA graph.  ``uniform`` promises that every sequence
        has the same length, which allows one mask for the batch (none at q = 1).
        """
        b, q = tokens.shape
        if self.k_cache is None or b > self.batch:
            raise ValueError(f"allocate a KV cache for at least {b} sequences first")
        positions = lengths[:, None] + torch.arange(q, device=self.device)[None, :]  # (b, q)
        if span is None:
            span = int(positions.max()) + 1  # keys 0 .. span-1 are attended
        if span > self.capacity:
            raise ValueError(f"KV cache capacity {self.capacity} exceeded (span {span})")
        angles = positions[..., None].float() * self.inv_freq  # (b, q, hd/2)
        cos = torch.cos(angles)[:, :, None, :].to(self.dtype)  # (b, q, 1, hd/2), broadcast over heads
        sin = torch.sin(angles)[:, :, None, :].to(self.dtype)
        mask = self._mask(positions, span, uniform)
        rows = torch.arange(b, device=self.device)[:, None]
        x = self.embed[tokens]
        for index in range(len(self.layers)):
            x = self._layer(index, x, cos, sin, rows, positions, span, mask)
        return F.linear(self._norm(x, self.final_norm), self.lm_head)
