//! `print`: Mosaic's logging ops, as Pallas's `debug_print` lowers to them.
//! Scalars (i32) go to `tpu.log`, whose tag numbers its placeholders `$0`,
//! `$1`, ...; a tile is stored into a VMEM buffer allocated in a
//! `tpu.region` and logged whole by `tpu.log_buffer`, tagged with the text
//! before its `{}`.

use crate::mosaic::body::{Lower, R};
use crate::mosaic::mlir::{region, At, MemSpace};
use melior::ir::attribute::StringAttribute;
use melior::ir::Block;
use pk_lang::ir;

pub(crate) fn print<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    fmt: &str,
    args: &[ir::Value],
) -> R<()> {
    let tile = args.first().copied().filter(|v| !cx.ty(*v).is_scalar());
    let Some(v) = tile else {
        let vals = args.iter().map(|v| cx.val(*v)).collect::<R<Vec<_>>>()?;
        let tag = log_tag(fmt);
        let mut attrs = vec![("tag", StringAttribute::new(cx.m.ctx, &tag).into())];
        if !args.is_empty() {
            attrs.push(("formatted", cx.m.bool_attr(true)));
        }
        return cx.m.op0(at, "tpu.log", &vals, &attrs);
    };
    let ty = cx.ty(v).clone();
    let shape: Vec<u64> = ty.shape().iter().map(|d| d.get()).collect();
    let x = cx.val(v)?;
    let block = Block::new(&[]);
    {
        let inner = At {
            block: &block,
            loc: at.loc,
            src: at.src,
        };
        let mem_ty =
            cx.m.memref(&shape, cx.m.storage(ty.dtype()), MemSpace::Vmem);
        let mem = cx.m.op1(
            inner,
            "memref.alloca",
            &[],
            mem_ty,
            &[("operandSegmentSizes", cx.m.i32_array(&[0, 0]))],
        )?;
        let zeros = (0..shape.len())
            .map(|_| cx.m.index_const(inner, 0))
            .collect::<R<Vec<_>>>()?;
        cx.m.tpu_vector_store(inner, x, mem, &zeros, None)?;
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let prefix = unescape(fmt.strip_suffix("{}").unwrap_or(fmt));
        cx.m.op0(
            inner,
            "tpu.log_buffer",
            &[mem],
            &[
                ("shape", cx.m.i64_array(&dims)),
                ("tag", StringAttribute::new(cx.m.ctx, &prefix).into()),
            ],
        )?;
        cx.m.op0(inner, "tpu.yield", &[], &[])?;
    }
    cx.m.op(at, "tpu.region", &[], &[], &[], vec![region(block)])
        .map(drop)
}

/// `tpu.log`'s tag of a format: the `n`th `{}` becomes `$n`, and doubled
/// braces single ones.
fn log_tag(fmt: &str) -> String {
    let mut out = String::new();
    let mut n = 0;
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        match (c, it.peek()) {
            ('{', Some('}')) => {
                it.next();
                out.push_str(&format!("${n}"));
                n += 1;
            }
            ('{', Some('{')) | ('}', Some('}')) => {
                it.next();
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A format without placeholders, its doubled braces made single.
fn unescape(fmt: &str) -> String {
    fmt.replace("{{", "{").replace("}}", "}")
}

#[cfg(test)]
mod tests {
    use super::{log_tag, unescape};

    #[test]
    fn placeholders_become_numbered_dollars() {
        assert_eq!(log_tag("step {} of {}"), "step $0 of $1");
        assert_eq!(log_tag("{{literal}} {}"), "{literal} $0");
        assert_eq!(log_tag("no args"), "no args");
        assert_eq!(unescape("m {{i}} = "), "m {i} = ");
    }
}
