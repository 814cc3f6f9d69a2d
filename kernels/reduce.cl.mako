<%inherit file="/base.cl.mako"/>
<%doc>
  Two-stage reductions, first stage: every work-group writes one partial result per field;
  oclsci/runtime/reduction.py launches the kernel and finishes the partial results.
  Kernels that reduce import the defs below with
      <%namespace name="reduction" file="/reduce.cl.mako"/>
  each_item(count, chunked)  (called with a body: <%reduction:each_item count="n" ...>)
      Runs the body once for every k < count (an expression, evaluated once) that falls to
      this work-item: k from its global id in steps of the global size (neighbouring work-items
      read neighbouring items: GPUs), or with chunked one contiguous run of
      ceil(count / global size) items (CPUs).
  group_tree(group_size, result_type, fields, partial)
      Combines each field's value over the work-group in a tree: while width = group_size / 2,
      / 4 ... 1, work-item l < width sets value[l] = combine(value[l], value[l + width]); then
      work-item 0 writes field f to partial[len(fields) * group + f]. fields: (variable,
      combine) pairs, combine a binary operator ("+") or a function of two values ("fmin").
      Call it at the kernel's outermost scope (it declares local arrays) with every work-item
      of the group: group_size, a power of two, is the kernel's reqd_work_group_size.
  As a template, kernel `reduce`: the reduction of map_expr over count items.
  Parameters:
    dtype        real_t (or None)
    result_dtype result_t, the type of the values and partial results
    params       the kernel's parameters before count, (name, cl type, is_array) each; an
                 array parameter is a const __global pointer
    preamble     C code placed before the kernel (helper functions)
    map_expr     the value of item k (an expression of k and the parameters)
    neutral      the value that leaves every other unchanged under combine
    combine      as for group_tree
    group_size   work-items per group (a power of two)
    chunked      as for each_item
  Kernel arguments: the params, then ulong count and __global result_t *partial.
</%doc>
<%def name="each_item(count, chunked)">
% if chunked:
    const size_t chunk_ = ((size_t)(${count}) + get_global_size(0) - 1) / get_global_size(0);
    const size_t first_ = get_global_id(0) * chunk_;
    const size_t last_ = min(first_ + chunk_, (size_t)(${count}));
    for (size_t k = first_; k < last_; ++k) {
        ${caller.body()}
    }
% else:
    const size_t count_ = (size_t)(${count});
    for (size_t k = get_global_id(0); k < count_; k += get_global_size(0)) {
        ${caller.body()}
    }
% endif
</%def>
<%def name="combined(combine, a, b)">${f"{a} {combine} {b}" if not combine[0].isalpha() and combine[0] != "_" else f"{combine}({a}, {b})"}</%def>
<%def name="group_tree(group_size, result_type, fields, partial)">
    // Combine the work-group's values in a tree; work-item 0 writes the group's result.
% for variable, combine in fields:
    __local ${result_type} ${variable}_tree[${group_size}];
% endfor
    const size_t lid_ = get_local_id(0);
% for variable, combine in fields:
    ${variable}_tree[lid_] = ${variable};
% endfor
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t width_ = ${group_size} / 2; width_ > 0; width_ /= 2) {
        if (lid_ < width_) {
% for variable, combine in fields:
            ${variable}_tree[lid_] = ${combined(combine, f"{variable}_tree[lid_]", f"{variable}_tree[lid_ + width_]")};
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid_ == 0) {
% for index, (variable, combine) in enumerate(fields):
        ${partial}[${f"{len(fields)} * get_group_id(0) + {index}" if len(fields) > 1 else "get_group_id(0)"}] = ${variable}_tree[0];
% endfor
    }
</%def>
typedef ${cl_type(result_dtype)} result_t;
${preamble}

__kernel __attribute__((reqd_work_group_size(${group_size}, 1, 1)))
void reduce(
% for name, ctype, is_array in params:
    ${f"__global const {ctype} *restrict {name}" if is_array else f"const {ctype} {name}"},
% endfor
    const ulong count, __global result_t *restrict partial)
{
    result_t value = ${neutral};
    <%self:each_item count="count" chunked="${chunked}">
        value = ${combined(combine, "value", f"({map_expr})")};
    </%self:each_item>
${group_tree(group_size, "result_t", [("value", combine)], "partial")}
}
