/**
 * @file Tree-sitter grammar for pk, the TPU kernel language (`.pk`).
 *
 * It follows lang/src/grammar.lalrpop: items (`use`, `const`, `fn`,
 * `kernel`), kernel headers (parameters, operands, clauses), statements
 * and expressions with the same precedence. Comments of every kind
 * (line, doc and block comments) are `comment` nodes.
 */

/* eslint-disable arrow-parens, camelcase */

const PREC = {
  or: 1,
  and: 2,
  cmp: 3,
  bitor: 4,
  bitxor: 5,
  bitand: 6,
  shift: 7,
  sum: 8,
  prod: 9,
  cast: 10,
  unary: 11,
  postfix: 12,
};

/** Comma-separated, with an optional trailing comma. */
function commaSep(rule) {
  return optional(seq(rule, repeat(seq(',', rule)), optional(',')));
}

/** The binary operators at and above `+`, over `operand`. */
function arithmetic($, operand) {
  return choice(
    prec.left(PREC.sum, seq(field('left', operand), field('operator', choice('+', '-')), field('right', operand))),
    prec.left(PREC.prod, seq(field('left', operand), field('operator', choice('*', '/', '%')), field('right', operand))),
  );
}

module.exports = grammar({
  name: 'pk',

  word: $ => $.identifier,

  // Block comments nest, which a regular expression cannot follow: the
  // external scanner (src/scanner.c) reads them; `//` comments are lexed
  // here.
  externals: $ => [$.comment],

  extras: $ => [/\s/, $.comment],

  supertypes: $ => [$._expression, $._statement, $._item],


  rules: {
    source_file: $ => repeat($._item),

    _item: $ => choice(
      $.use_declaration,
      $.const_declaration,
      $.function_declaration,
      $.kernel_declaration,
    ),

    comment: _ => token(seq('//', /[^\n]*/)),

    identifier: _ => /[A-Za-z_][A-Za-z0-9_]*/,
    integer: _ => token(choice(/0[xX][0-9a-fA-F_]+/, /0b[01_]+/, /[0-9][0-9_]*/)),
    float: _ => token(choice(
      /[0-9][0-9_]*\.[0-9][0-9_]*([eE][+-]?[0-9]+)?/,
      /[0-9][0-9_]*[eE][+-]?[0-9]+/,
    )),
    string: _ => /"([^"\\\n]|\\.)*"/,
    boolean: _ => choice('true', 'false'),
    none: _ => 'none',

    path: $ => seq($.identifier, repeat1(seq('::', $.identifier))),

    // ---- Items ----------------------------------------------------------

    use_declaration: $ => seq('use', $._use_tail, ';'),
    _use_tail: $ => choice(
      $.identifier,
      seq($.identifier, '::', $._use_tail),
      seq($.identifier, '::', $.use_list),
    ),
    use_list: $ => seq('{', commaSep($.identifier), '}'),

    const_declaration: $ => seq('const', field('name', $.identifier), '=', field('value', $._expression), ';'),

    function_declaration: $ => seq(
      'fn',
      field('name', $.identifier),
      optional(field('generics', $.generic_parameters)),
      field('parameters', $.parameters),
      optional(seq('->', field('return_type', choice($.type, $.tuple_type)))),
      field('body', $.block),
    ),
    generic_parameters: $ => seq('<', commaSep($.identifier), '>'),
    parameters: $ => seq('(', commaSep($.parameter), ')'),
    parameter: $ => seq(
      field('name', $.identifier),
      optional(seq(':', field('type', $.type))),
      optional(seq('=', field('default', $._expression))),
    ),
    type: $ => prec.right(seq(
      field('dtype', $.identifier),
      optional(seq('[', commaSep(choice($._expression, $.rest)), ']')),
    )),
    tuple_type: $ => seq('(', commaSep($.type), ')'),
    rest: _ => '..',

    kernel_declaration: $ => seq(
      'kernel',
      field('name', $.identifier),
      optional(field('parameters', $.kernel_parameters)),
      field('inputs', $.operands),
      optional(seq('->', field('outputs', choice($.operand, $.operands)))),
      repeat($._clause),
      field('body', $.block),
    ),
    kernel_parameters: $ => seq('<', commaSep($.kernel_parameter), '>'),
    kernel_parameter: $ => seq(
      field('name', $.identifier),
      optional(seq(':', field('kind', choice('dtype', $.identifier)), optional('?'))),
      optional(seq('=', field('default', $._arith))),
      optional(seq('in', field('candidates', choice($.range_candidates, $._arith)))),
    ),
    range_candidates: $ => seq($._arith, '..=', $._arith, optional(seq('step', $._arith))),

    operands: $ => seq('(', commaSep($.operand), ')'),
    operand: $ => seq(
      field('name', $.identifier),
      ':',
      field('dtype', $.identifier),
      $.shape,
      optional(field('placement', choice($.block_placement, $.space_placement))),
      optional(seq('aliases', field('aliases', $.identifier))),
      optional($.condition),
    ),
    shape: $ => seq('[', commaSep($._expression_or_if), ']'),
    condition: $ => seq('if', $._expression),
    block_placement: $ => seq(
      'block',
      '[',
      commaSep(choice($.squeezed, $._expression_or_if)),
      ']',
      'at',
      $.index_map,
      optional(seq('in', $.memory_space)),
      optional(seq('buffered', '(', field('buffers', $._expression), ')')),
    ),
    index_map: $ => seq('(', commaSep($._expression), ')'),
    squeezed: _ => '_',
    space_placement: $ => seq('in', $.memory_space),
    memory_space: _ => choice('vmem', 'smem', 'any'),

    _clause: $ => choice(
      $.grid_clause,
      $.prefetch_clause,
      $.scratch_clause,
      $.vmem_limit_clause,
      $.static_assert,
      $.where_clause,
    ),
    grid_clause: $ => seq('grid', '(', commaSep($.grid_dimension), ')'),
    grid_dimension: $ => seq(
      field('name', $.identifier),
      'in',
      field('extent', $._arith),
      optional(seq('<=', field('bound', $._arith))),
      field('semantics', $.semantics),
    ),
    semantics: _ => choice('parallel', 'arbitrary'),
    prefetch_clause: $ => seq('prefetch', '(', commaSep($.prefetch_declaration), ')'),
    prefetch_declaration: $ => seq(
      field('name', $.identifier), ':', field('dtype', $.identifier), $.shape, optional($.condition),
    ),
    scratch_clause: $ => seq('scratch', '(', commaSep($.scratch_declaration), ')'),
    scratch_declaration: $ => seq(
      field('name', $.identifier),
      ':',
      choice(
        seq($.memory_space, field('dtype', $.identifier), $.shape),
        seq('dma_sem', optional(seq('[', commaSep($._expression), ']'))),
      ),
      optional($.condition),
    ),
    vmem_limit_clause: $ => seq('vmem_limit', $._arith),
    where_clause: $ => seq('where', $._expression),

    // ---- Statements -----------------------------------------------------

    block: $ => seq('{', repeat($._statement), optional(field('value', $._expression)), '}'),

    _statement: $ => choice(
      $.let_statement,
      $.let_tuple_statement,
      $.assignment,
      $.expression_statement,
      $.if_statement,
      $.for_statement,
      $.while_statement,
      $.assert_statement,
      $.print_statement,
      $.function_declaration,
    ),
    let_statement: $ => seq(
      'let',
      optional('mut'),
      field('name', $.identifier),
      optional(seq(':', field('type', $.type))),
      '=',
      field('value', $._expression_or_if),
      ';',
    ),
    let_tuple_statement: $ => seq(
      'let',
      '(',
      commaSep(choice(seq(optional('mut'), $.identifier), $.squeezed)),
      ')',
      '=',
      field('value', $._expression_or_if),
      ';',
    ),
    assignment: $ => seq(
      field('target', $._expression),
      field('operator', choice('=', '+=', '-=', '*=', '/=')),
      field('value', $._expression_or_if),
      ';',
    ),
    expression_statement: $ => seq($._expression, ';'),
    if_statement: $ => prec.right(seq($.if_expression, optional(';'))),
    for_statement: $ => seq(
      'for',
      field('variable', $.identifier),
      'in',
      field('start', $._expression),
      '..',
      field('end', $._expression),
      optional(seq('step', field('step', $._expression))),
      optional('unroll'),
      field('body', $.block),
    ),
    while_statement: $ => seq('while', field('condition', $._expression), field('body', $.block)),
    assert_statement: $ => seq($.static_assert, ';'),
    print_statement: $ => seq('print', '(', field('format', $.string), repeat(seq(',', field('argument', $._expression))), ')', ';'),
    static_assert: $ => seq('assert', '(', field('condition', $._expression), optional(seq(',', field('message', $.string))), ')'),

    // ---- Expressions ----------------------------------------------------

    _expression_or_if: $ => choice($._expression, $.if_expression),

    if_expression: $ => seq(
      'if',
      field('condition', $._expression),
      field('consequence', $.block),
      optional(seq('else', field('alternative', choice($.block, $.if_expression)))),
    ),

    _expression: $ => choice(
      $.binary_expression,
      $.unary_expression,
      $.cast_expression,
      $.none_test,
      $.index_expression,
      $.method_expression,
      $._primary,
    ),

    // The operators at and above `+` only: a kernel parameter's default or
    // candidates, a grid extent, `vmem_limit` (a `>` there ends a list).
    _arith: $ => choice(
      alias($.arith_binary, $.binary_expression),
      alias($.arith_unary, $.unary_expression),
      alias($.arith_cast, $.cast_expression),
      alias($.arith_index, $.index_expression),
      alias($.arith_method, $.method_expression),
      $._primary,
    ),
    arith_binary: $ => arithmetic($, $._arith),
    arith_unary: $ => prec(PREC.unary, seq(field('operator', choice('-', '!')), field('operand', $._arith))),
    arith_cast: $ => prec.left(PREC.cast, seq(field('value', $._arith), 'as', field('type', $.identifier))),
    arith_index: $ => prec(PREC.postfix, seq(field('value', $._arith), $.index_list)),
    arith_method: $ => prec(PREC.postfix, seq(
      field('receiver', $._arith),
      '.',
      field('method', alias(choice($.identifier, 'at'), $.identifier)),
      choice($.index_list, $.arguments),
    )),

    binary_expression: $ => {
      const table = [
        [PREC.or, '||'],
        [PREC.and, '&&'],
        [PREC.cmp, choice('==', '!=', '<', '<=', '>', '>=')],
        [PREC.bitor, '|'],
        [PREC.bitxor, '^'],
        [PREC.bitand, '&'],
        [PREC.shift, choice('<<', '>>')],
        [PREC.sum, choice('+', '-')],
        [PREC.prod, choice('*', '/', '%')],
      ];
      return choice(...table.map(([p, op]) => prec.left(p, seq(
        field('left', $._expression),
        field('operator', op),
        field('right', $._expression),
      ))));
    },
    none_test: $ => prec.left(PREC.cmp, seq($._expression, 'is', optional('not'), $.none)),
    unary_expression: $ => prec(PREC.unary, seq(field('operator', choice('-', '!')), field('operand', $._expression))),
    cast_expression: $ => prec.left(PREC.cast, seq(field('value', $._expression), 'as', field('type', $.identifier))),

    index_expression: $ => prec(PREC.postfix, seq(field('value', $._expression), $.index_list)),
    index_list: $ => seq('[', commaSep(choice($.full_slice, $.rest, $.range, $._expression)), ']'),
    full_slice: _ => ':',
    range: $ => seq($._expression, '..', $._expression),
    method_expression: $ => prec(PREC.postfix, seq(
      field('receiver', $._expression),
      '.',
      field('method', alias(choice($.identifier, 'at'), $.identifier)),
      choice($.index_list, $.arguments),
    )),

    _primary: $ => choice(
      $.integer,
      $.float,
      $.boolean,
      $.none,
      $.identifier,
      $.path,
      $.call_expression,
      $.parenthesized_expression,
      $.tuple_expression,
      $.list_expression,
    ),
    call_expression: $ => seq(field('function', choice($.identifier, $.path)), $.arguments),
    arguments: $ => seq('(', commaSep($.argument), ')'),
    argument: $ => choice(
      $._expression,
      seq(field('name', $.identifier), '=', field('value', $._expression)),
    ),
    parenthesized_expression: $ => seq('(', $._expression, ')'),
    tuple_expression: $ => seq('(', $._expression, ',', commaSep($._expression), ')'),
    list_expression: $ => seq('[', commaSep($._expression), ']'),
  },
});
