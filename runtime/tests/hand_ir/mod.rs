//! Kernels built directly in Tile IR (no front end), for tests of the Wasm
//! back end and the CPU executor on exactly chosen ops.

#![allow(dead_code)]

use pk_lang::ir::*;
use pk_lang::span::{SourceMap, Span};
use pk_runtime::cpu::{CpuKernel, HostArray, RunOptions};

/// A kernel under construction: whole-array VMEM operands and a body.
pub struct Builder {
    pub k: Kernel,
    pub entry: BlockId,
}

pub fn vec_t(d: DType, shape: &[i64]) -> Type {
    Type::of(d, shape.iter().map(|&n| Dim::Known(n)).collect())
}

impl Builder {
    /// A kernel with a grid of the given extents (all `arbitrary`).
    pub fn new(grid: &[i64]) -> Builder {
        let mut body = Func::default();
        let entry = body.new_block(&vec![Type::Scalar(DType::I32); grid.len()]);
        body.entry = Some(entry);
        let k = Kernel {
            name: "hand".into(),
            docs: vec![],
            params: vec![],
            grid: grid
                .iter()
                .enumerate()
                .map(|(i, &e)| GridAxis {
                    name: format!("g{i}"),
                    extent: Dim::Known(e),
                    semantics: Semantics::Arbitrary,
                    dynamic: None,
                })
                .collect(),
            operands: vec![],
            scratch: vec![],
            refs: Arena::new(),
            body,
            vmem_limit: None,
            mesh: vec![],
            collective_id: None,
            span: Span::default(),
        };
        Builder { k, entry }
    }

    /// Adds a whole-array VMEM operand; returns its ref.
    pub fn operand(&mut self, name: &str, role: Role, d: DType, shape: &[i64]) -> RefId {
        let shape: Shape = shape.iter().map(|&n| Dim::Known(n)).collect();
        let idx = self.k.operands.len();
        let r = self.k.refs.append(RefDecl {
            name: name.into(),
            ty: RefType {
                space: Space::Vmem,
                dtype: d,
                shape: shape.clone(),
            },
            origin: RefOrigin::Operand(idx),
        });
        self.k.operands.push(Operand {
            name: name.into(),
            docs: vec![],
            role,
            dtype: d,
            shape,
            space: Space::Vmem,
            block: None,
            ref_id: r,
            aliases: None,
            span: Span::default(),
        });
        r
    }

    pub fn push1(&mut self, b: BlockId, kind: OpKind, ty: Type) -> Value {
        self.k.body.push1(b, kind, ty, Span::default())
    }

    pub fn push0(&mut self, b: BlockId, kind: OpKind) {
        self.k.body.push(b, kind, &[], Span::default());
    }

    /// A load of a whole ref.
    pub fn load_all(&mut self, b: BlockId, r: RefId) -> Value {
        let t = self.k.refs[r].ty.clone();
        let index = t
            .shape
            .iter()
            .map(|d| Slice::Range {
                start: Start::Const(0),
                size: d.get(),
            })
            .collect();
        self.push1(
            b,
            OpKind::Load(RefView { target: r, index }),
            Type::of(t.dtype, t.shape),
        )
    }

    pub fn store_all(&mut self, b: BlockId, r: RefId, v: Value) {
        let t = self.k.refs[r].ty.clone();
        let index = t
            .shape
            .iter()
            .map(|d| Slice::Range {
                start: Start::Const(0),
                size: d.get(),
            })
            .collect();
        self.push0(b, OpKind::Store(RefView { target: r, index }, v, None));
    }

    pub fn konst(&mut self, b: BlockId, l: Literal, t: Type) -> Value {
        self.push1(b, OpKind::Const(l), t)
    }

    /// Verifies, lowers and compiles.
    pub fn build(self) -> CpuKernel {
        self.build_with(&pk_lowering::wasm::Options::default())
    }

    pub fn build_with(self, opts: &pk_lowering::wasm::Options) -> CpuKernel {
        verify::verify_kernel(&self.k, true).expect("hand-built IR verifies");
        let sources = SourceMap::new();
        let w = pk_lowering::wasm::lower(&self.k, &sources, opts).expect("lowers");
        CpuKernel::from_lowered(&w, false).expect("compiles")
    }
}

/// Runs a kernel single-threaded.
pub fn run(k: &CpuKernel, inputs: Vec<HostArray>) -> Vec<HostArray> {
    let opts = RunOptions {
        threads: 1,
        ..RunOptions::default()
    };
    k.run(inputs, &opts).expect("runs")
}
