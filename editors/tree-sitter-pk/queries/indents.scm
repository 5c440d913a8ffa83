; Indentation for pk (.pk): blocks and bracketed lists indent their
; contents one level; the closing bracket lines up with the opening line.

[
  (block)
  (kernel_parameters)
  (operands)
  (parameters)
  (arguments)
  (index_list)
  (index_map)
  (shape)
  (list_expression)
  (tuple_expression)
  (grid_clause)
  (prefetch_clause)
  (scratch_clause)
  (use_list)
] @indent.begin

[ "}" ")" "]" ">" ] @indent.branch
[ "}" ")" "]" ] @indent.end

(comment) @indent.auto
