//! The `--in` arrays of `pkc tune`'s counting mode: read once, then matched
//! to each configuration's operands (docs/tuning.md, "Counting mode").

use pk_lang::ir;
use pk_runtime::cpu::{npy, Error as CpuError};
use pk_runtime::tune::count;
use std::path::PathBuf;

/// One `--in` array: its header, and its data when it is small enough to
/// be an SMEM operand, the only operands whose values the count reads.
pub(super) struct GivenArray {
    pub header: npy::Header,
    pub data: Option<npy::NpyArray>,
}

/// The `--in` arrays, read once: name, path and contents.
pub(super) type Given = Vec<(String, PathBuf, GivenArray)>;

/// Arrays up to this size are read whole; larger ones only by their
/// header. SMEM, where the operands the count reads live, holds at most
/// 1 MiB on every TPU generation.
const READ_WHOLE_BYTES: usize = 16 << 20;

pub(super) fn read_given(inputs: &[(String, PathBuf)]) -> Result<Given, CpuError> {
    inputs
        .iter()
        .map(|(n, p)| {
            let r = npy::open(p)?;
            let header = r.header.clone();
            let data = if header.nbytes <= READ_WHOLE_BYTES {
                Some(r.read()?)
            } else {
                None
            };
            Ok((n.clone(), p.clone(), GivenArray { header, data }))
        })
        .collect()
}

/// Opens each `--in` file and reads its header, so that an unreadable or
/// malformed file is reported before any tuning starts.
pub(super) fn check_given(inputs: &[(String, PathBuf)]) -> Result<(), CpuError> {
    for (_, p) in inputs {
        npy::open(p)?;
    }
    Ok(())
}

/// The arrays the count reads for one configuration's kernel, checked
/// against its operands: every operand the count reads (the SMEM ones)
/// must be given, of its dtype and shape, and every other array given must
/// name an input and have its shape in this configuration.
pub(super) fn count_arrays(k: &ir::Kernel, given: &Given) -> Result<count::Arrays, CpuError> {
    let shape = |o: &ir::Operand| -> Vec<u64> {
        o.shape
            .iter()
            .map(|d| d.known().unwrap_or(0).max(0) as u64)
            .collect()
    };
    let mut arrays = count::Arrays::new();
    for (name, path, a) in given {
        let Some((i, o)) = k
            .operands
            .iter()
            .enumerate()
            .find(|(_, o)| o.role != ir::Role::Output && o.name == *name)
        else {
            let known: Vec<&str> = k.inputs().map(|o| o.name.as_str()).collect();
            return Err(CpuError::UnknownOperand {
                kernel: k.name.clone(),
                role: "input".into(),
                name: name.clone(),
                known: known.join(", "),
            });
        };
        let shown = path.display().to_string();
        if count::read_operands(k).contains(&i) {
            // Small (SMEM) arrays: checked and converted as the CPU
            // reference would read them.
            let h = &a.header;
            pk_runtime::cpu::check_header(&o.name, o.dtype, &shape(o), h, &shown)?;
            let Some(data) = &a.data else {
                return Err(CpuError::Unsupported {
                    message: format!(
                        "`{shown}` holds {} for the SMEM operand `{}`, more than SMEM holds",
                        pk_runtime::cpu::human_bytes(h.nbytes as u64),
                        o.name
                    ),
                    src: None,
                    span: None,
                });
            };
            arrays.insert(i, npy::values(data, o.dtype));
        } else {
            // The count does not read it: its shape is checked, without
            // reading what may be a large array.
            pk_runtime::cpu::check_shape(&o.name, &shape(o), &a.header.shape, &shown)?;
        }
    }
    for i in count::read_operands(k) {
        let o = &k.operands[i];
        if !arrays.contains_key(&i) {
            let dims: Vec<String> = shape(o).iter().map(u64::to_string).collect();
            return Err(CpuError::MissingInput {
                operand: o.name.clone(),
                expected: format!("{}[{}]", o.dtype, dims.join(", ")),
            });
        }
    }
    Ok(arrays)
}
