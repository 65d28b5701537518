/* Calls functions of its own library (own_names_lib.c) whose names the
 * runtime also uses internally, and prints what they return: the same with
 * and without strata. */
#include <stdio.h>

int is_null(const void* p);

int main(void) {
  int x = 0;
  printf("is_null(NULL) = %d, is_null(&x) = %d\n", is_null(NULL), is_null(&x));
  return 0;
}
