use super::*;

fn f32_2d() -> TensorType {
    TensorType::new([512, 128], ElemType::F32)
}

fn add_call() -> CustomCall {
    CustomCall {
        kernel_name: "add_kernel".to_string(),
        mosaic_text: "module {}".to_string(),
        operands: vec![f32_2d(), f32_2d()],
        results: vec![f32_2d()],
        cost: None,
        vmem_limit_bytes: None,
        aliases: vec![],
        metadata_json: String::new(),
        has_side_effect: false,
        dynamic_grid: Vec::new(),
        has_communication: false,
        collective_id: None,
        spmd_partitions: None,
    }
}

/// Decodes an MLIR string literal body the way MLIR's lexer does: `\XX`
/// hex escapes, `\\`, `\"`, `\n` and `\t`.
fn unescape_mlir(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => out.push(b'\\'),
            Some(b'"') => out.push(b'"'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            _ => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 1;
            }
        }
        i += 2;
    }
    out
}

/// The contents of the string attribute `name = "..."` in `text`.
fn string_attr<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text.find(&format!("{name} = \"")).unwrap() + name.len() + 4;
    let len = text[start..].find('"').unwrap();
    &text[start..start + len]
}

fn backend_config(text: &str) -> serde_json::Value {
    let raw = unescape_mlir(string_attr(text, "backend_config"));
    serde_json::from_slice(&raw).unwrap()
}

#[test]
fn add_kernel_module_matches_jax() {
    let text = custom_call_module(&add_call()).unwrap();
    let body = base64::engine::general_purpose::STANDARD.encode("module {}");
    let expected = format!(
        r#"module @jit_add_kernel attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<512x128xf32>, %arg1: tensor<512x128xf32>) -> (tensor<512x128xf32> {{jax.result_info = "result"}}) {{
    %0 = stablehlo.custom_call @tpu_custom_call(%arg0, %arg1) {{backend_config = "{{\22custom_call_config\22: {{\22body\22: \22{body}\22, \22serialization_format\22: 1, \22needs_layout_passes\22: true}}}}", kernel_name = "add_kernel", mhlo.frontend_attributes = {{kernel_metadata = "{{}}"}}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>]}} : (tensor<512x128xf32>, tensor<512x128xf32>) -> tensor<512x128xf32>
    return %0 : tensor<512x128xf32>
  }}
}}
"#
    );
    assert_eq!(text, expected);
}

#[test]
fn backend_config_round_trips_through_mlir_escaping() {
    let mosaic = "module attributes {stable_mosaic.version = 11 : i64} {\n  \"x\" \\ é\n}\n";
    let call = CustomCall {
        mosaic_text: mosaic.to_string(),
        cost: Some(CostEstimate {
            flops: 1 << 40,
            transcendentals: 3,
            bytes_accessed: 786_432,
            remote_bytes_transferred: 0,
        }),
        vmem_limit_bytes: Some(100 << 20),
        ..add_call()
    };
    let text = custom_call_module(&call).unwrap();
    let config = backend_config(&text);
    let ccc = &config["custom_call_config"];
    let body = base64::engine::general_purpose::STANDARD
        .decode(ccc["body"].as_str().unwrap())
        .unwrap();
    assert_eq!(body, mosaic.as_bytes());
    assert_eq!(ccc["serialization_format"], 1);
    assert_eq!(ccc["needs_layout_passes"], true);
    assert_eq!(ccc["cost_estimate"]["flops"], 1u64 << 40);
    assert_eq!(ccc["cost_estimate"]["transcendentals"], 3);
    assert_eq!(ccc["cost_estimate"]["bytes_accessed"], 786_432);
    assert_eq!(ccc["cost_estimate"]["remote_bytes_transferred"], 0);
    assert_eq!(
        config["scoped_memory_configs"],
        serde_json::json!([{"memory_space": 1, "offset": 0, "size": 100u64 << 20}])
    );
}

#[test]
fn escaping_is_exact() {
    assert_eq!(escape_mlir_string("plain text {}:[],"), "plain text {}:[],");
    assert_eq!(
        escape_mlir_string(r#"{"a": "b\c"}"#),
        r#"{\22a\22: \22b\5Cc\22}"#
    );
    assert_eq!(escape_mlir_string("tab\tnl\ncr\r"), r"tab\09nl\0Acr\0D");
    assert_eq!(escape_mlir_string("\u{7f}é"), r"\7F\C3\A9");
    let all: String = (1u8..=0x7f).map(char::from).collect::<String>() + "ü€";
    assert_eq!(unescape_mlir(&escape_mlir_string(&all)), all.as_bytes());
}

#[test]
fn metadata_is_compacted_and_escaped() {
    let call = CustomCall {
        metadata_json: r#"{ "source": "k.pk", "note": "say \"hi\"" }"#.to_string(),
        ..add_call()
    };
    let text = custom_call_module(&call).unwrap();
    assert!(
        text.contains(
            r#"mhlo.frontend_attributes = {kernel_metadata = "{\22note\22:\22say \5C\22hi\5C\22\22,\22source\22:\22k.pk\22}"}"#
        ),
        "{text}"
    );
    let raw = unescape_mlir(string_attr(&text, "kernel_metadata"));
    let value: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(value["note"], "say \"hi\"");
}

#[test]
fn layouts_are_row_major_for_every_rank() {
    let layout = |shape: &[i64]| TensorType::new(shape, ElemType::F32).row_major_layout();
    assert_eq!(layout(&[]), "dense<> : tensor<0xindex>");
    assert_eq!(layout(&[8]), "dense<0> : tensor<1xindex>");
    assert_eq!(layout(&[8, 128]), "dense<[1, 0]> : tensor<2xindex>");
    assert_eq!(layout(&[2, 8, 128]), "dense<[2, 1, 0]> : tensor<3xindex>");
}

#[test]
fn tensor_types_print_as_mlir() {
    let t = |shape: &[i64], dtype| TensorType::new(shape, dtype).to_string();
    assert_eq!(t(&[], ElemType::F32), "tensor<f32>");
    assert_eq!(t(&[4, 8], ElemType::Bf16), "tensor<4x8xbf16>");
    assert_eq!(t(&[3], ElemType::U8), "tensor<3xui8>");
    assert_eq!(t(&[3], ElemType::I1), "tensor<3xi1>");
    assert_eq!(t(&[1, 2], ElemType::F8E4M3FN), "tensor<1x2xf8E4M3FN>");
    let names: Vec<&str> = [
        ElemType::F32,
        ElemType::Bf16,
        ElemType::I32,
        ElemType::I16,
        ElemType::I8,
        ElemType::U8,
        ElemType::I1,
        ElemType::F8E4M3FN,
        ElemType::F8E5M2,
    ]
    .iter()
    .map(|e| e.mlir_name())
    .collect();
    assert_eq!(
        names,
        ["f32", "bf16", "i32", "i16", "i8", "ui8", "i1", "f8E4M3FN", "f8E5M2"]
    );
}

#[test]
fn multiple_results_and_aliases_print_as_jax_does() {
    let call = CustomCall {
        kernel_name: "two outs".to_string(),
        results: vec![f32_2d(), TensorType::new([], ElemType::I32)],
        aliases: vec![(1, 0)],
        has_side_effect: true,
        dynamic_grid: Vec::new(),
        has_communication: false,
        collective_id: None,
        spmd_partitions: None,
        ..add_call()
    };
    let text = custom_call_module(&call).unwrap();
    assert!(
        text.starts_with("module @\"jit_two outs\" attributes"),
        "{text}"
    );
    assert!(
        text.contains(
            "-> (tensor<512x128xf32> {jax.result_info = \"result[0]\"}, \
             tensor<i32> {jax.result_info = \"result[1]\"}) {"
        ),
        "{text}"
    );
    assert!(
        text.contains("    %0:2 = stablehlo.custom_call @tpu_custom_call(%arg0, %arg1) {"),
        "{text}"
    );
    assert!(text.contains(", has_side_effect = true, kernel_name = \"two outs\","));
    assert!(text.contains(
        "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], \
         operand_index = 1, operand_tuple_indices = []>], result_layouts = \
         [dense<[1, 0]> : tensor<2xindex>, dense<> : tensor<0xindex>]}"
    ));
    assert!(
        text.contains("-> (tensor<512x128xf32>, tensor<i32>)\n"),
        "{text}"
    );
    assert!(text.contains("    return %0#0, %0#1 : tensor<512x128xf32>, tensor<i32>\n"));
}

#[test]
fn single_result_alias_has_no_tuple_index() {
    let call = CustomCall {
        aliases: vec![(0, 0)],
        ..add_call()
    };
    let text = custom_call_module(&call).unwrap();
    assert!(text.contains(
        "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], \
         operand_index = 0, operand_tuple_indices = []>]"
    ));
}

#[test]
fn malformed_calls_are_rejected() {
    let err = |call: CustomCall| custom_call_module(&call).err();
    assert_eq!(
        err(CustomCall {
            results: vec![],
            ..add_call()
        }),
        Some(StableHloError::NoResults)
    );
    assert!(matches!(
        err(CustomCall {
            operands: vec![TensorType::new([-1, 128], ElemType::F32)],
            ..add_call()
        }),
        Some(StableHloError::DynamicShape {
            what: "operand",
            index: 0,
            ..
        })
    ));
    assert!(matches!(
        err(CustomCall {
            aliases: vec![(2, 0)],
            ..add_call()
        }),
        Some(StableHloError::AliasOutOfRange { operand: 2, .. })
    ));
    assert!(matches!(
        err(CustomCall {
            results: vec![TensorType::new([512, 128], ElemType::Bf16)],
            aliases: vec![(0, 0)],
            ..add_call()
        }),
        Some(StableHloError::AliasTypeMismatch { .. })
    ));
    assert_eq!(
        err(CustomCall {
            aliases: vec![(0, 0), (1, 0)],
            ..add_call()
        }),
        Some(StableHloError::AliasResultTwice { result: 0 })
    );
    assert!(matches!(
        err(CustomCall {
            metadata_json: "[1, 2]".to_string(),
            ..add_call()
        }),
        Some(StableHloError::Metadata(_))
    ));
    assert!(matches!(
        err(CustomCall {
            metadata_json: "{".to_string(),
            ..add_call()
        }),
        Some(StableHloError::Metadata(_))
    ));
}

/// A dynamic grid bound is read in `main` from its operand's element and
/// passed first, as a `tensor<i32>` with a rank-0 layout; aliases count it.
#[test]
fn dynamic_grid_bounds_lead_the_operands() {
    let call = CustomCall {
        operands: vec![TensorType::new([2, 3], ElemType::I32), f32_2d()],
        aliases: vec![(1, 0)],
        dynamic_grid: vec![DynamicBound {
            operand: 0,
            index: vec![1, 2],
        }],
        ..add_call()
    };
    let text = custom_call_module(&call).unwrap();
    assert!(text.contains(
        "    %bound0_slice = \"stablehlo.slice\"(%arg0) {limit_indices = array<i64: 2, 3>, \
         start_indices = array<i64: 1, 2>, strides = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<1x1xi32>\n    \
         %bound0 = stablehlo.reshape %bound0_slice : (tensor<1x1xi32>) -> tensor<i32>\n"
    ));
    assert!(text.contains("@tpu_custom_call(%bound0, %arg0, %arg1)"));
    assert!(text.contains(
        "operand_layouts = [dense<> : tensor<0xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]"
    ));
    assert!(text
        .contains(": (tensor<i32>, tensor<2x3xi32>, tensor<512x128xf32>) -> tensor<512x128xf32>"));
    assert!(text.contains("operand_index = 2, operand_tuple_indices = []"));
    // A bound must be one element of an i32 operand.
    for bad in [
        DynamicBound {
            operand: 1,
            index: vec![0, 0],
        },
        DynamicBound {
            operand: 0,
            index: vec![2, 0],
        },
        DynamicBound {
            operand: 0,
            index: vec![0],
        },
        DynamicBound {
            operand: 5,
            index: vec![0, 0],
        },
    ] {
        let call = CustomCall {
            dynamic_grid: vec![bad],
            has_communication: false,
            collective_id: None,
            spmd_partitions: None,
            ..call.clone()
        };
        assert_eq!(
            custom_call_module(&call).err(),
            Some(StableHloError::DynamicBound { bound: 0 })
        );
    }
}
