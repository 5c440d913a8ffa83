//! Wraps a serialized stable-Mosaic module into the StableHLO module that the
//! TPU runtime loads: one `func.func public @main` whose body is a single
//! `stablehlo.custom_call @tpu_custom_call`, printed exactly as JAX prints it
//! for a Pallas kernel.
//!
//! The output is MLIR text. It is assembled with `format!` because no MLIR
//! binding on this machine knows the StableHLO dialect; in exchange every
//! piece is produced by one small function here, string literals go through
//! [`escape_mlir_string`], and the result is accepted by libtpu's parser in
//! the runtime's acceptance tests.
//!
//! Invariants of the emitted text:
//! - every operand and result is a static-shaped ranked tensor;
//! - layouts are row-major (`minor_to_major = [rank-1, ..., 0]`);
//! - `backend_config` is a JSON object whose `custom_call_config.body` is the
//!   base64 of the Mosaic text, with `serialization_format: 1`;
//! - an alias `(operand, result)` only ever joins tensors of the same type.

use std::fmt::{self, Write as _};

use base64::Engine as _;
use serde::Serialize;

/// An element type that a kernel operand or result may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    F32,
    Bf16,
    I32,
    I16,
    I8,
    /// Unsigned 8-bit; StableHLO spells it `ui8` (signless `i8` is signed there).
    U8,
    /// Booleans; StableHLO's `pred` type is `i1`.
    I1,
    F8E4M3FN,
    F8E5M2,
}

impl ElemType {
    /// The MLIR spelling of the type, as used inside `tensor<...>`.
    pub fn mlir_name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::Bf16 => "bf16",
            ElemType::I32 => "i32",
            ElemType::I16 => "i16",
            ElemType::I8 => "i8",
            ElemType::U8 => "ui8",
            ElemType::I1 => "i1",
            ElemType::F8E4M3FN => "f8E4M3FN",
            ElemType::F8E5M2 => "f8E5M2",
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

/// A static-shaped tensor type: `tensor<512x128xf32>`, or `tensor<f32>` for
/// rank 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub shape: Vec<i64>,
    pub dtype: ElemType,
}

impl TensorType {
    pub fn new(shape: impl Into<Vec<i64>>, dtype: ElemType) -> Self {
        TensorType {
            shape: shape.into(),
            dtype,
        }
    }

    /// The row-major layout attribute, `dense<[1, 0]> : tensor<2xindex>`.
    ///
    /// MLIR prints a dense attribute whose elements are all equal as a splat,
    /// so rank 1 is `dense<0> : tensor<1xindex>` and rank 0 is
    /// `dense<> : tensor<0xindex>`; this matches what JAX emits.
    pub fn row_major_layout(&self) -> String {
        let rank = self.shape.len();
        let dims: Vec<String> = (0..rank).rev().map(|d| d.to_string()).collect();
        let body = match rank {
            0 => String::new(),
            1 => dims.concat(),
            _ => format!("[{}]", dims.join(", ")),
        };
        format!("dense<{body}> : tensor<{rank}xindex>")
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for dim in &self.shape {
            write!(f, "{dim}x")?;
        }
        write!(f, "{}>", self.dtype)
    }
}

/// The cost hint XLA uses to schedule around the kernel; the field names and
/// their meaning are those of Pallas's `pl.CostEstimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CostEstimate {
    pub flops: u64,
    pub transcendentals: u64,
    pub bytes_accessed: u64,
    pub remote_bytes_transferred: u64,
}

/// Everything needed to wrap one Mosaic kernel into a StableHLO module.
#[derive(Debug, Clone)]
pub struct CustomCall {
    /// The kernel's name, shown by XLA in profiles and error messages.
    pub kernel_name: String,
    /// The serialized stable-Mosaic module, as MLIR text.
    pub mosaic_text: String,
    /// One tensor per kernel input, in call order.
    pub operands: Vec<TensorType>,
    /// One tensor per kernel output, in call order; at least one.
    pub results: Vec<TensorType>,
    pub cost: Option<CostEstimate>,
    /// Scoped VMEM the kernel may use; `None` keeps the compiler's default.
    pub vmem_limit_bytes: Option<u64>,
    /// `(operand index, result index)` pairs whose buffers are shared, so the
    /// kernel updates the operand in place. This is the custom call's own
    /// aliasing; `main` does not donate its arguments (that is the caller's
    /// choice), so XLA copies an aliased operand when it must keep it.
    pub aliases: Vec<(usize, usize)>,
    /// A JSON object recorded as the `kernel_metadata` frontend attribute;
    /// an empty string stands for `{}`.
    pub metadata_json: String,
    /// Keeps XLA from removing or deduplicating the call (e.g. kernels that
    /// only write through aliases).
    pub has_side_effect: bool,
    /// The dynamic grid bounds, one per dynamic `iteration_bounds` entry of
    /// the Mosaic kernel, in grid order. Each is read in `main` from one
    /// element of an operand and passed to the custom call ahead of the
    /// operands, as Pallas passes its dynamic grid bounds.
    pub dynamic_grid: Vec<DynamicBound>,
    /// The kernel talks to other devices (remote copies, signals, a
    /// barrier): `"has_communication": true` in the backend config, as
    /// Pallas writes it.
    pub has_communication: bool,
    /// The collective id of the kernel's barrier semaphore.
    pub collective_id: Option<u64>,
    /// `Some(n)`: the module is one SPMD program of `n` partitions, each
    /// running the call on its own shard (JAX's `shard_map`): arguments,
    /// call and results are manually sharded, `mhlo.num_partitions = n`.
    pub spmd_partitions: Option<u32>,
}

/// One dynamic grid bound: element `index` of operand `operand` (an `i32`
/// array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicBound {
    pub operand: usize,
    pub index: Vec<i64>,
}

/// A [`CustomCall`] that cannot be wrapped. These are checked before any text
/// is produced; each one is a bug in the stage that built the call, not a
/// user error, so they carry no diagnostic code.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StableHloError {
    #[error("a TPU custom call needs at least one result")]
    NoResults,
    #[error("{what} {index} has a negative dimension in {shape:?}; shapes must be static")]
    DynamicShape {
        what: &'static str,
        index: usize,
        shape: Vec<i64>,
    },
    #[error(
        "alias (operand {operand}, result {result}) is out of range: \
         {operands} operands, {results} results"
    )]
    AliasOutOfRange {
        operand: usize,
        result: usize,
        operands: usize,
        results: usize,
    },
    #[error("alias (operand {operand}, result {result}) joins {operand_type} with {result_type}")]
    AliasTypeMismatch {
        operand: usize,
        result: usize,
        operand_type: String,
        result_type: String,
    },
    #[error("result {result} is aliased to more than one operand")]
    AliasResultTwice { result: usize },
    #[error("kernel metadata is not a JSON object: {0}")]
    Metadata(String),
    #[error("dynamic grid bound {bound} is not one element of an i32 operand")]
    DynamicBound { bound: usize },
}

/// Builds the StableHLO module text for `call`.
pub fn custom_call_module(call: &CustomCall) -> Result<String, StableHloError> {
    validate(call)?;
    let metadata = compact_metadata(&call.metadata_json)?;
    // An SPMD program of a kernel across devices: every value is the
    // device's own shard (manually sharded, as inside `shard_map`).
    let manual = if call.spmd_partitions.is_some() {
        ", mhlo.sharding = \"{manual}\""
    } else {
        ""
    };
    let args: Vec<String> = call
        .operands
        .iter()
        .enumerate()
        .map(|(i, t)| match manual {
            "" => format!("%arg{i}: {t}"),
            _ => format!("%arg{i}: {t} {{mhlo.sharding = \"{{manual}}\"}}"),
        })
        .collect();
    // Dynamic grid bounds go first, as scalar `i32` tensors.
    let bound_ty = TensorType::new(Vec::new(), ElemType::I32);
    let operand_names: Vec<String> = (0..call.dynamic_grid.len())
        .map(|k| format!("%bound{k}"))
        .chain((0..call.operands.len()).map(|i| format!("%arg{i}")))
        .collect();
    let operand_types: Vec<String> = call
        .dynamic_grid
        .iter()
        .map(|_| &bound_ty)
        .chain(&call.operands)
        .map(|t| t.to_string())
        .collect();
    let result_types: Vec<String> = call.results.iter().map(|t| t.to_string()).collect();

    let (main_results, binding, returned, call_results) = match result_types.as_slice() {
        // One result: `main` calls it "result", as JAX does for a jitted
        // function returning one array, and the op's value is `%0`.
        [only] => (
            format!("({only} {{jax.result_info = \"result\"{manual}}})"),
            "%0".to_string(),
            "%0".to_string(),
            only.clone(),
        ),
        // Several: "result[i]" as for a returned tuple; the op binds `%0:N`
        // and its results are `%0#i`.
        many => {
            let infos: Vec<String> = many
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{t} {{jax.result_info = \"result[{i}]\"{manual}}}"))
                .collect();
            let uses: Vec<String> = (0..many.len()).map(|i| format!("%0#{i}")).collect();
            (
                format!("({})", infos.join(", ")),
                format!("%0:{}", many.len()),
                uses.join(", "),
                format!("({})", many.join(", ")),
            )
        }
    };

    let mut out = String::new();
    // Writing to a `String` cannot fail, so the `fmt::Result`s are dropped.
    let _ = writeln!(
        out,
        "module @{} attributes {{mhlo.num_partitions = {} : i32, mhlo.num_replicas = 1 : i32}} {{",
        symbol_name(&format!("jit_{}", call.kernel_name)),
        call.spmd_partitions.unwrap_or(1)
    );
    let _ = writeln!(
        out,
        "  func.func public @main({}) -> {main_results} {{",
        args.join(", ")
    );
    for (k, b) in call.dynamic_grid.iter().enumerate() {
        write_bound(&mut out, k, b, &call.operands[b.operand]);
    }
    let _ = writeln!(
        out,
        "    {binding} = stablehlo.custom_call @tpu_custom_call({}) {{{}}} : ({}) -> {call_results}",
        operand_names.join(", "),
        custom_call_attributes(call, &metadata),
        operand_types.join(", "),
    );
    let _ = writeln!(out, "    return {returned} : {}", result_types.join(", "));
    out.push_str("  }\n}\n");
    Ok(out)
}

/// `%boundK`: element `b.index` of operand `b.operand` as a `tensor<i32>`,
/// a one-element `stablehlo.slice` reshaped to rank 0.
fn write_bound(out: &mut String, k: usize, b: &DynamicBound, t: &TensorType) {
    let list =
        |v: &mut dyn Iterator<Item = i64>| v.map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    let one = TensorType::new(vec![1; t.shape.len()], t.dtype);
    let _ = writeln!(
        out,
        "    %bound{k}_slice = \"stablehlo.slice\"(%arg{}) {{limit_indices = array<i64: {}>, start_indices = array<i64: {}>, strides = array<i64: {}>}} : ({t}) -> {one}",
        b.operand,
        list(&mut b.index.iter().map(|i| i + 1)),
        list(&mut b.index.iter().copied()),
        list(&mut b.index.iter().map(|_| 1)),
    );
    let _ = writeln!(
        out,
        "    %bound{k} = stablehlo.reshape %bound{k}_slice : ({one}) -> tensor<i32>"
    );
}

/// The attribute dictionary of the custom call, in the alphabetical order in
/// which MLIR prints a dictionary attribute.
fn custom_call_attributes(call: &CustomCall, metadata: &str) -> String {
    let mut attrs = vec![format!(
        "backend_config = \"{}\"",
        escape_mlir_string(&backend_config_json(call))
    )];
    if call.has_side_effect {
        attrs.push("has_side_effect = true".to_string());
    }
    attrs.push(format!(
        "kernel_name = \"{}\"",
        escape_mlir_string(&call.kernel_name)
    ));
    attrs.push(format!(
        "mhlo.frontend_attributes = {{kernel_metadata = \"{}\"}}",
        escape_mlir_string(metadata)
    ));
    if call.spmd_partitions.is_some() {
        attrs.push("mhlo.sharding = \"{manual}\"".to_string());
    }
    let bounds = vec![TensorType::new(Vec::new(), ElemType::I32); call.dynamic_grid.len()];
    let operands: Vec<TensorType> = bounds.into_iter().chain(call.operands.clone()).collect();
    attrs.push(format!("operand_layouts = [{}]", layouts(&operands)));
    if !call.aliases.is_empty() {
        attrs.push(format!(
            "output_operand_aliases = [{}]",
            output_operand_aliases(call)
        ));
    }
    attrs.push(format!("result_layouts = [{}]", layouts(&call.results)));
    attrs.join(", ")
}

fn layouts(tensors: &[TensorType]) -> String {
    let parts: Vec<String> = tensors.iter().map(|t| t.row_major_layout()).collect();
    parts.join(", ")
}

/// With a single result the alias refers to it implicitly (empty
/// `output_tuple_indices`); with several, the index selects the result.
fn output_operand_aliases(call: &CustomCall) -> String {
    let many = call.results.len() > 1;
    let parts: Vec<String> = call
        .aliases
        .iter()
        .map(|&(operand, result)| {
            let tuple = if many {
                format!("[{result}]")
            } else {
                "[]".to_string()
            };
            // The dynamic grid bounds come first among the call's operands.
            let operand = operand + call.dynamic_grid.len();
            format!(
                "#stablehlo.output_operand_alias<output_tuple_indices = {tuple}, \
                 operand_index = {operand}, operand_tuple_indices = []>"
            )
        })
        .collect();
    parts.join(", ")
}

/// The `backend_config` JSON that libtpu's custom-call handler reads.
///
/// Keys appear in the order JAX writes them; the structs below exist so that
/// serde keeps that order (a `serde_json::Value` map would sort the keys).
pub fn backend_config_json(call: &CustomCall) -> String {
    #[derive(Serialize)]
    struct Config<'a> {
        custom_call_config: CustomCallConfig<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        scoped_memory_configs: Option<[ScopedMemory; 1]>,
    }
    #[derive(Serialize)]
    struct CustomCallConfig<'a> {
        body: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        has_communication: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        collective_id: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_estimate: Option<CostEstimate>,
        serialization_format: u32,
        needs_layout_passes: bool,
    }
    #[derive(Serialize)]
    struct ScopedMemory {
        memory_space: u32,
        offset: u64,
        size: u64,
    }
    /// The memory-space colour of VMEM in XLA:TPU.
    const VMEM: u32 = 1;

    let body = base64::engine::general_purpose::STANDARD.encode(call.mosaic_text.as_bytes());
    let config = Config {
        custom_call_config: CustomCallConfig {
            body: &body,
            has_communication: call.has_communication,
            collective_id: call.collective_id,
            cost_estimate: call.cost,
            serialization_format: 1,
            needs_layout_passes: true,
        },
        scoped_memory_configs: call.vmem_limit_bytes.map(|size| {
            [ScopedMemory {
                memory_space: VMEM,
                offset: 0,
                size,
            }]
        }),
    };
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, JaxSpacing);
    // Serializing plain structs of strings and integers into memory cannot
    // fail, and serde_json writes only UTF-8.
    let _ = config.serialize(&mut serializer);
    String::from_utf8(out).unwrap_or_default()
}

/// JSON with `", "` and `": "` between items, the spacing of the
/// `backend_config` that JAX writes, so pk's modules read like JAX's.
struct JaxSpacing;

impl serde_json::ser::Formatter for JaxSpacing {
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }
}

/// Escapes `s` as the contents of an MLIR string literal (without the quotes).
///
/// Printable ASCII stays as it is, except `"` and `\`; every other byte,
/// including each byte of a multi-byte UTF-8 character, becomes `\XX` with
/// two upper-case hex digits. MLIR's lexer decodes `\XX` back to the byte, so
/// the literal round-trips exactly; this is also how MLIR prints strings
/// (`"` as `\22`).
pub fn escape_mlir_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "\\{b:02X}");
        }
    }
    out
}

/// A symbol name as MLIR accepts it after `@`: a bare identifier when `name`
/// is one, otherwise a quoted string.
fn symbol_name(name: &str) -> String {
    let mut chars = name.chars();
    let bare = match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
        }
        _ => false,
    };
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", escape_mlir_string(name))
    }
}

/// Re-encodes the caller's metadata compactly with sorted keys (as JAX
/// does) after checking it is a JSON object.
fn compact_metadata(json: &str) -> Result<String, StableHloError> {
    if json.trim().is_empty() {
        return Ok("{}".to_string());
    }
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| StableHloError::Metadata(e.to_string()))?;
    if !value.is_object() {
        return Err(StableHloError::Metadata(format!("found `{value}`")));
    }
    Ok(sort_keys(value).to_string())
}

/// Orders object keys explicitly: serde_json keeps insertion order when
/// another crate in the build enables its `preserve_order` feature.
fn sort_keys(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

fn validate(call: &CustomCall) -> Result<(), StableHloError> {
    if call.results.is_empty() {
        return Err(StableHloError::NoResults);
    }
    let tensors = call
        .operands
        .iter()
        .enumerate()
        .map(|(i, t)| ("operand", i, t))
        .chain(
            call.results
                .iter()
                .enumerate()
                .map(|(i, t)| ("result", i, t)),
        );
    for (what, index, t) in tensors {
        if t.shape.iter().any(|&d| d < 0) {
            return Err(StableHloError::DynamicShape {
                what,
                index,
                shape: t.shape.clone(),
            });
        }
    }
    for (bound, b) in call.dynamic_grid.iter().enumerate() {
        let fits = call.operands.get(b.operand).is_some_and(|t| {
            t.dtype == ElemType::I32
                && t.shape.len() == b.index.len()
                && b.index.iter().zip(&t.shape).all(|(&i, &d)| 0 <= i && i < d)
        });
        if !fits {
            return Err(StableHloError::DynamicBound { bound });
        }
    }
    let mut aliased = vec![false; call.results.len()];
    for &(operand, result) in &call.aliases {
        let (Some(op_ty), Some(res_ty)) = (call.operands.get(operand), call.results.get(result))
        else {
            return Err(StableHloError::AliasOutOfRange {
                operand,
                result,
                operands: call.operands.len(),
                results: call.results.len(),
            });
        };
        if op_ty != res_ty {
            return Err(StableHloError::AliasTypeMismatch {
                operand,
                result,
                operand_type: op_ty.to_string(),
                result_type: res_ty.to_string(),
            });
        }
        if std::mem::replace(&mut aliased[result], true) {
            return Err(StableHloError::AliasResultTwice { result });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
