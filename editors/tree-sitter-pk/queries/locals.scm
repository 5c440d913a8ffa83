; Scopes, definitions and references for pk (.pk).

[
  (source_file)
  (kernel_declaration)
  (function_declaration)
  (block)
  (for_statement)
] @local.scope

(const_declaration name: (identifier) @local.definition.constant)
(kernel_parameter name: (identifier) @local.definition.parameter)
(parameter name: (identifier) @local.definition.parameter)
(generic_parameters (identifier) @local.definition.type)
(operand name: (identifier) @local.definition.parameter)
(prefetch_declaration name: (identifier) @local.definition.parameter)
(scratch_declaration name: (identifier) @local.definition.var)
(grid_dimension name: (identifier) @local.definition.var)
(let_statement name: (identifier) @local.definition.var)
(let_tuple_statement (identifier) @local.definition.var)
(for_statement variable: (identifier) @local.definition.var)
(function_declaration name: (identifier) @local.definition.function)

(identifier) @local.reference
