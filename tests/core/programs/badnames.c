/* Creates and writes files whose names are not valid UTF-8 (and one that is),
 * in the directory given as argv[1]: for the JSON escaping tests
 * (launcher_test.cc, JsonOutput). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* names[] = {"\xff\xfe-name", "\xc3", "\xc3\xa9-ok", "tab\there\x01\"q\\", "\xed\xa0\x80-surrogate",
                         "\xe2\x82", "\xc0\xaf-overlong"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) return 1;
    if (write(fd, "data\n", 5) != 5) return 1;
    close(fd);
    FILE* f = fopen(path, "r");
    if (!f) return 1;
    char buf[8];
    if (!fgets(buf, sizeof buf, f)) return 1;
    fclose(f);
  }
  return 0;
}
