/* A library of the traced program that defines functions under names the
 * runtime uses inside itself (own_names.c calls them). The runtime must not
 * export such names: preloaded first in the global scope, it would bind the
 * program's calls to its own functions of the same name. */
int is_null(const void* p) { return p ? 0 : 42; }
