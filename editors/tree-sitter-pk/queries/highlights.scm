; Highlighting for pk (.pk).

(comment) @comment
((comment) @comment.documentation
  (#match? @comment.documentation "^//[/!]"))

(string) @string
(integer) @number
(float) @number.float
(boolean) @boolean
(none) @constant.builtin

; Declarations.
(kernel_declaration name: (identifier) @function)
(function_declaration name: (identifier) @function)
(const_declaration name: (identifier) @constant)
(kernel_parameter name: (identifier) @variable.parameter)
(kernel_parameter kind: (identifier) @type.builtin)
(parameter name: (identifier) @variable.parameter)
(generic_parameters (identifier) @type)
(operand name: (identifier) @variable.parameter)
(prefetch_declaration name: (identifier) @variable.parameter)
(scratch_declaration name: (identifier) @variable)
(grid_dimension name: (identifier) @variable)

; Types: element types of operands, scratch, values.
(type dtype: (identifier) @type)
(operand dtype: (identifier) @type)
(prefetch_declaration dtype: (identifier) @type)
(scratch_declaration dtype: (identifier) @type)
(cast_expression type: (identifier) @type)
(memory_space) @type.builtin
(semantics) @attribute

; Calls.
(call_expression function: (identifier) @function.call)
(call_expression function: (path (identifier) @function.call .))
(method_expression method: (identifier) @function.method.call)
(argument name: (identifier) @variable.parameter)
(path (identifier) @module (identifier))

(for_statement variable: (identifier) @variable)

[
  "kernel" "fn" "use" "const" "let" "mut"
  "grid" "scratch" "prefetch" "block" "at" "buffered" "aliases" "vmem_limit" "where"
  "dma_sem" "dtype" "step" "unroll" "is" "not" "as" "in"
] @keyword

[ "if" "else" ] @keyword.conditional
[ "for" "while" ] @keyword.repeat
"assert" @keyword
"print" @function.builtin

[
  "=" "+=" "-=" "*=" "/=" "==" "!=" "<" "<=" ">" ">=" "+" "-" "*" "/" "%"
  "!" "&&" "||" "&" "|" "^" "<<" ">>" "->" ".." "..=" "?"
] @operator

[ "(" ")" "[" "]" "{" "}" ] @punctuation.bracket
[ "," ";" ":" "::" "." ] @punctuation.delimiter
(full_slice) @punctuation.delimiter
(rest) @punctuation.special
(squeezed) @variable.builtin
