; Kernel definitions: a function definition marked `__global__`, directly or
; through a type qualifier, possibly inside a template declaration.
(function_definition "__global__" declarator: (_) @declarator) @kernel
(function_definition (type_qualifier "__global__") declarator: (_) @declarator) @kernel
