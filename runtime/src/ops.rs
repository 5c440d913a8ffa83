//! The codes of the kernel library's JAX functions (`pk.ops` in the Python
//! package), `PK5301..PK5399`: arguments an op refuses before any kernel is
//! built, worded in the caller's terms (the op, the argument, the layout or
//! dtypes it takes).
//!
//! The checks are Python (`python/pk/ops/_check.py` and the op modules),
//! where the arrays are; their long forms live here so that `pkc explain`
//! prints them with every other code.
//!
//! Invariant: every code the op modules raise has an explanation here, and
//! every explanation is raised by some op (the test below reads the Python
//! sources); `python/tests/test_ops_edges.py` triggers each one.

use pk_lang::diag::Explanation;

/// The long form of every `PK53xx` code, for `pkc explain`.
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK5301",
        title: "op-dtype",
        what: "An array passed to a `pk.ops` function has a dtype the op does not take.",
        why: "Each op runs kernels written for particular dtypes: most take float32 and \
              bfloat16 (computing in f32), the quantized matmuls int8 or fp8, and metadata \
              (labels, group sizes, page tables) integers. pk has no float16, and an op does \
              not convert a floating-point argument on its own: a conversion changes the \
              numbers and the bytes moved, so it is the caller's choice. The error is also a \
              `TypeError`.",
        example: "pk.ops.rms_norm(x.astype(jnp.float16), w)\n\
                  error[PK5301]: pk.ops.rms_norm takes `x` in float32 or bfloat16, not float16\n\
                  pk.ops.rms_norm(x.astype(jnp.bfloat16), w)",
    },
    Explanation {
        code: "PK5302",
        title: "op-layout",
        what: "An array passed to a `pk.ops` function has a rank or shape that does not fit \
               the op's layout.",
        why: "The ops take the layouts of their JAX counterparts (`[B, H, S, D]` for flash \
              attention as Pallas's kernel, packed `[TQ, H, D]` queries for ragged paged \
              attention) and name them in the message; they neither broadcast nor guess a \
              transpose. Ops over rows (the norms, softmax, xent) take any leading axes. The \
              error is also a `ValueError`.",
        example: "pk.ops.flash_attention(q[0], k[0], v[0])   # [H, S, D]\n\
                  error[PK5302]: pk.ops.flash_attention takes `q` as [B, H, S, D], a 4-D array, \
                  but it is 3-D with shape [8, 1024, 128]\n\
                  pk.ops.flash_attention(q, k, v)             # [1, 8, 1024, 128]",
    },
    Explanation {
        code: "PK5303",
        title: "xent-label-out-of-range",
        what: "A label given to `pk.ops.xent` is the vocabulary size V (the logits' last \
               dimension) or more.",
        why: "Labels run from 0 to V - 1; a negative label (or one equal to `ignore_index`) \
              marks a row to ignore. A label past the vocabulary names no logit, usually a \
              tokenizer and model that disagree. Concrete labels are refused; traced labels \
              give that row a NaN loss (as `jnp.take_along_axis` fills an out-of-range \
              gather) and are reported at run time under `pk.ops.checks()`.",
        example: "pk.ops.xent(logits, labels)       # logits [8, 32000], a label is 32000\n\
                  error[PK5303]: pk.ops.xent: labels[3] = 32000 is past the vocabulary (V = \
                  32000, the logits' last axis)\n\
                  pk.ops.xent(logits, labels, ignore_index=32000)   # if it pads",
    },
    Explanation {
        code: "PK5304",
        title: "gmm-group-sizes-exceed-rows",
        what: "The group sizes given to `pk.ops.gmm` or `pk.ops.tgmm` include a negative \
               size, or add up to more than M, the rows of `lhs`.",
        why: "Group g owns the next `group_sizes[g]` rows of `lhs`; rows past M do not \
              exist, and the kernels' tile walk (built from the sizes) would run past the \
              array. Concrete sizes are refused. Traced sizes are clipped, negative ones to \
              0 and the running total at M (the rows of a group past M are dropped, as \
              `jax.lax.ragged_dot` computes), so the walk stays within `lhs` on CPU and TPU; \
              `pk.ops.checks()` reports them at run time instead.",
        example: "pk.ops.gmm(lhs, rhs, jnp.array([300, 300]))   # lhs has 512 rows\n\
                  error[PK5304]: pk.ops.gmm: the group sizes add up to 600, more than the 512 \
                  rows of `lhs` (M)\n\
                  pk.ops.gmm(lhs, rhs, jnp.array([256, 256]))",
    },
    Explanation {
        code: "PK5305",
        title: "paged-attention-metadata",
        what: "The sequence metadata given to `pk.ops.paged_attention` or \
               `pk.ops.ragged_paged_attention` does not describe the cache: a sequence with \
               more new tokens than tokens, more tokens than its row of the page table holds, \
               a page index outside the cache, `num_seqs` larger than the tables, or \
               `cu_q_lens` that falls or runs past the packed queries.",
        why: "The kernels read the tables as scalar prefetch and copy the pages they name; \
              values outside these ranges read other sequences' pages or past the cache, \
              which the TPU does not check. Concrete values are checked before the call, as \
              JAX's `ragged_paged_attention` checks them in `dynamic_validate_inputs`; traced \
              ones at run time under `pk.ops.checks()`.",
        example: "pk.ops.ragged_paged_attention(q, kp, vp, kv_lens=[4], page_indices=pi,\n\
                  \x20                             cu_q_lens=[0, 8], num_seqs=[1])\n\
                  error[PK5305]: pk.ops.ragged_paged_attention: sequence 0 has 8 new tokens \
                  (cu_q_lens[1] - cu_q_lens[0]) but only 4 tokens in all (kv_lens[0])",
    },
    Explanation {
        code: "PK5306",
        title: "op-traced-parameter",
        what: "A parameter that a `pk.ops` function compiles into its kernel (a soft cap, an \
               epsilon, a block size, a window) was given as a traced value.",
        why: "Kernel parameters are constants of the compiled kernel, fixed when the op is \
              traced, while a value computed inside `jax.jit` is known only when it runs. \
              Pass a Python number (a closure, or `static_argnames`). The attention ops' \
              `sm_scale` is the exception: a traced scale multiplies the queries before the \
              kernel. The error is also a `TypeError`.",
        example: "jax.jit(lambda x, eps: pk.ops.rms_norm(x, w, eps=eps))(x, 1e-6)\n\
                  error[PK5306]: pk.ops.rms_norm compiles `eps` into the kernel, so it must be \
                  a Python float, not a traced value\n\
                  jax.jit(lambda x: pk.ops.rms_norm(x, w, eps=1e-6))(x)",
    },
    Explanation {
        code: "PK5307",
        title: "op-keyword",
        what: "A keyword argument of a `pk.ops` function has a value the op does not take: \
               a non-positive block size or window, a negative soft cap, an unknown \
               activation, or one of a pair (segment ids, quantization scales) without the \
               other.",
        why: "These values have no meaning for the kernel (a window of no tokens, a block of \
              no rows), or only together (queries' segment ids without the keys'). The error \
              is also a `ValueError`.",
        example: "pk.ops.ragged_paged_attention(..., sliding_window=0)\n\
                  error[PK5307]: pk.ops.ragged_paged_attention: `sliding_window` is 0; it \
                  must be positive\n\
                  pk.ops.ragged_paged_attention(..., sliding_window=None)   # no window",
    },
];

#[cfg(test)]
mod tests {
    use super::EXPLANATIONS;
    use std::collections::BTreeSet;

    /// The `PK53xx` codes written in the op modules of the Python package.
    fn raised() -> BTreeSet<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/pk/ops");
        let mut codes = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).expect("python/pk/ops is readable") {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|e| e == "py") {
                let text = std::fs::read_to_string(&path).expect("a readable module");
                for (i, _) in text.match_indices("\"PK53") {
                    codes.insert(text[i + 1..i + 7].to_string());
                }
            }
        }
        codes
    }

    #[test]
    fn every_raised_code_is_explained_and_every_explanation_raised() {
        let explained: BTreeSet<String> = EXPLANATIONS.iter().map(|e| e.code.to_string()).collect();
        assert_eq!(
            explained.len(),
            EXPLANATIONS.len(),
            "a code is defined twice"
        );
        assert_eq!(raised(), explained);
        for e in EXPLANATIONS {
            assert!(e.code.starts_with("PK53"), "{} is outside PK53xx", e.code);
            assert!(!e.what.is_empty() && !e.why.is_empty() && !e.example.is_empty());
        }
    }
}
