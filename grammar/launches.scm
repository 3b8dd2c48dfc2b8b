; Kernel launches `k<<<grid, block, smem, stream>>>(args)`. The launched
; expression is an identifier, a template instantiation or a qualified name.
(call_expression
  function: (_) @kernel
  (kernel_call_syntax) @config
  arguments: (argument_list) @args) @launch
