/* Calls every STDIO character, word, scanf and printf entry point (Darshan
 * 3.5's STDIO list and glibc's aliases) a known number of times on files under
 * argv[1]; the expected trace is spelled out in stdio_test.cc, in the same
 * order. Built -O2 and -O2 -D_FORTIFY_SOURCE=2. Arguments are laundered
 * through an empty asm so the compiler can neither fold nor rewrite the calls
 * (fputs -> fwrite, printf -> puts). Entry points the headers hide are reached
 * by name: vprintf/getchar/putchar (inlined by bits/stdio.h at -O2) through
 * function pointers, the GNU fscanf/vfscanf (C99 mode redirects to
 * __isoc99_*) through asm labels, _IO_getc/_IO_putc (no longer declared).
 * Any unexpected result exits 1 with a message on stderr.
 *
 * Files written: chars.txt (34 bytes), in.txt (3), out.txt (20, the program's
 * stdout); their content is the same with and without strata. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#define L(x) ({ __typeof__(x) _v = (x); __asm__ volatile("" : "+r"(_v)); _v; })
static const char* LS(const char* s) {
  __asm__ volatile("" : "+r"(s));
  return s;
}

extern int _IO_getc(FILE*);
extern int _IO_putc(int, FILE*);
extern int gnu_fscanf(FILE*, const char*, ...) __asm__("fscanf");
extern int gnu_vfscanf(FILE*, const char*, va_list) __asm__("vfscanf");
static int (*volatile vprintf_p)(const char*, va_list) = vprintf;
static int (*volatile getchar_p)(void) = getchar;
static int (*volatile putchar_p)(int) = putchar;

static char dir[2048];
static char* P(const char* name) {
  static char bufs[4][4096];
  static int next;
  char* b = bufs[next++ % 4];
  snprintf(b, 4096, "%s/%s", dir, name);
  return b;
}

static void fail(const char* what, long got, long want) {
  fprintf(stderr, "stdio_chars: %s returned %ld, expected %ld (errno %d)\n", what, got, want, errno);
  exit(1);
}
#define EXPECT(call, want)                               \
  do {                                                   \
    long got_ = (long)(call);                            \
    if (got_ != (long)(want)) fail(#call, got_, (want)); \
  } while (0)

static int vfprint(FILE* f, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfprintf(f, fmt, ap);
  va_end(ap);
  return r;
}
static int vprint(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vprintf_p(fmt, ap);
  va_end(ap);
  return r;
}
static int vscan_c99(FILE* f, const char* fmt, ...) {  /* __isoc99_vfscanf */
  va_list ap;
  va_start(ap, fmt);
  int r = vfscanf(f, fmt, ap);
  va_end(ap);
  return r;
}
static int vscan_gnu(FILE* f, const char* fmt, ...) {  /* vfscanf */
  va_list ap;
  va_start(ap, fmt);
  int r = gnu_vfscanf(f, fmt, ap);
  va_end(ap);
  return r;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  snprintf(dir, sizeof(dir), "%s", argv[1]);
  char line[64], rbuf[64];
  int a = 0, b = 0, n = 0;
  char ch = 0;

  /* 1. Writes: 34 bytes in 8 calls on a w+ stream. */
  FILE* f = fopen(P("chars.txt"), "w+");
  if (!f) fail("fopen chars.txt", 0, 1);
  EXPECT(fputc(L('A'), f), 'A');                        /* 0: 1 */
  EXPECT(putc(L('B'), f), 'B');                         /* 1: 1 */
  EXPECT(putw(L(0x44434241), f), 0);                    /* 2: 4, "ABCD" */
  EXPECT(fputs(LS("hello\n"), f) >= 0, 1);              /* 6: 6 */
  EXPECT(fprintf(f, "%d %d\n", L(12), L(345)), 7);      /* 12: 7 */
  EXPECT(vfprint(f, "%s:%d\n", LS("x"), L(7)), 4);      /* 19: 4 */
  EXPECT(fwrite(LS("0123456789"), 1, L(10), f), 10);    /* 23: 10 */
  EXPECT(_IO_putc(L('!'), f), '!');                     /* 33: 1 */
  /* 2. Reads back, with pushed-back characters and scans. */
  rewind(f);
  EXPECT(fgetc(f), 'A');                                /* 0 */
  EXPECT(getc(f), 'B');                                 /* 1 */
  EXPECT(getw(f), 0x44434241);                          /* 2: 4 */
  if (!fgets(line, L(7), f) || strcmp(line, "hello\n")) fail("fgets", 0, 1); /* 6: 6 */
  EXPECT(gnu_fscanf(f, "%d", &a), 1);                   /* 12: "12", 2 */
  EXPECT(fscanf(f, "%d", &b), 1);                       /* 14: " 345", 4 (__isoc99_fscanf) */
  if (a != 12 || b != 345) fail("fscanf values", a * 1000 + b, 12345);
  int c = fgetc(f);                                     /* 18: '\n' */
  EXPECT(c, '\n');
  EXPECT(ungetc(c, f), '\n');                           /* 19 -> 18 */
  EXPECT(_IO_getc(f), '\n');                            /* 18 */
  EXPECT(vscan_gnu(f, "%c:%d", &ch, &n), 2);            /* 19: "x:7", 3 */
  if (ch != 'x' || n != 7) fail("vfscanf values", ch, 'x');
  EXPECT(getc(f), '\n');                                /* 22 */
  EXPECT(ungetc(L('Z'), f), 'Z');                       /* 23 -> 22 */
  EXPECT(fread(rbuf, 1, L(4), f), 4);                   /* 22: "Z012" */
  if (memcmp(rbuf, "Z012", 4)) fail("fread after ungetc", rbuf[0], 'Z');
  EXPECT(ftell(f), 26);
  /* 3. Back to writing at the read position. */
  fpos_t pos;
  EXPECT(fgetpos(f, &pos), 0);
  EXPECT(fsetpos(f, &pos), 0);                          /* 26 */
  EXPECT(fwrite(LS("XY"), 1, L(2), f), 2);              /* 26: "34" -> "XY" */
  EXPECT(fflush(f), 0);
  fpos64_t pos64;
  EXPECT(fseek(f, 28, SEEK_SET), 0);
  EXPECT(fgetpos64(f, &pos64), 0);
  EXPECT(vscan_c99(f, "%d", &n), 1);                    /* 28: "56789", 5 */
  if (n != 56789) fail("vfscanf value", n, 56789);
  EXPECT(fsetpos64(f, &pos64), 0);                      /* 28 */
  EXPECT(fgetc(f), '5');                                /* 28 */
  /* 4. The end of the file: a cut word, EOF, a failed write. */
  EXPECT(fseek(f, 32, SEEK_SET), 0);
  EXPECT(getw(f), EOF);                                 /* 32: "9!", 2 */
  EXPECT(fgetc(f), EOF);                                /* 34: 0 */
  EXPECT(getc(f), EOF);                                 /* 34: 0 */
  EXPECT(fclose(f), 0);
  f = fopen(P("chars.txt"), "r");
  errno = 0;
  EXPECT(fputc(L('x'), f), EOF);                        /* read-only: -1, EBADF */
  if (errno != EBADF) fail("fputc errno", errno, EBADF);
  EXPECT(fclose(f), 0);

  /* 5. Streams on a shared description: a stream fdopen'ed on a dup starts
   * where the kernel is when it is first used (the other descriptor moved it
   * after the fdopen); numpy's np.load flow (dup, fdopen, ftell, fseek). */
  int fd = open(P("chars.txt"), O_RDONLY);
  EXPECT(read(fd, rbuf, L(5)), 5);                      /* 0: 5 */
  f = fdopen(dup(fd), "r");
  EXPECT(read(fd, rbuf, L(3)), 3);                      /* 5: 3, the stream now starts at 8 */
  EXPECT(fread(rbuf, 1, L(4), f), 4);                   /* 8: "llo\n" */
  EXPECT(fgetc(f), '1');                                /* 12 */
  EXPECT(fclose(f), 0);
  f = fdopen(dup(fd), "r");
  EXPECT(ftell(f), 34);                                 /* the first stream read to the end */
  EXPECT(fseek(f, L(2), SEEK_SET), 0);
  EXPECT(getc(f), 'A');                                 /* 2 */
  EXPECT(fclose(f), 0);
  EXPECT(close(fd), 0);

  /* 6. stdin and stdout on files. */
  f = fopen(P("in.txt"), "w");
  EXPECT(fputs(LS("kq\n"), f) >= 0, 1);
  EXPECT(fclose(f), 0);
  if (!freopen(P("in.txt"), "r", stdin)) fail("freopen stdin", 0, 1);
  EXPECT(getchar_p(), 'k');                             /* 0 */
  EXPECT(getchar(), 'q');                               /* 1: getc(stdin) at -O2 */
  if (!freopen(P("out.txt"), "w", stdout)) fail("freopen stdout", 0, 1);
  EXPECT(printf("%s=%d\n", LS("p"), L(1)), 4);          /* 0: 4 */
  EXPECT(vprint("%s-%d\n", LS("v"), L(2)), 4);          /* 4: 4 */
  EXPECT(putchar_p(L('c')), 'c');                       /* 8: 1 */
  EXPECT(putchar(L('d')), 'd');                         /* 9: 1, putc(c, stdout) at -O2 */
  EXPECT(puts(LS("line")) >= 0, 1);                     /* 10: 5 */
  EXPECT(fputs(LS("tail\n"), stdout) >= 0, 1);          /* 15: 5 */
  EXPECT(fflush(stdout), 0);
  exit(L(0));
}
