// Copied from /work/shared/bench/pread_bench.c (the shared reference workload of
// FIELD-NOTES.md; same workload the peer-tool figures were measured with). Unmodified below.
// pread_bench.c: N pread() of 4 KiB on a 64 MiB file (page cache) + M open/close pairs.
// usage: pread_bench FILE [npread=1000000] [nopen=10000]; prints per-call wall and CPU ns.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double cpu(void){struct timespec t;clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  const char*path=argc>1?argv[1]:"data/file64m.bin";
  long npread=argc>2?atol(argv[2]):1000000; long nopen=argc>3?atol(argv[3]):10000;
  const size_t FSZ=64UL<<20, BS=4096; char*buf=malloc(BS);
  int fd=open(path,O_RDONLY); if(fd<0){perror("open");return 1;}
  for(size_t off=0;off<FSZ;off+=BS) if(pread(fd,buf,BS,off)!=(ssize_t)BS){perror("warm");return 1;} /* warm page cache: 16384 preads */
  unsigned long long sum=0; size_t nblk=FSZ/BS;
  double c0=cpu(), t0=now();
  for(long i=0;i<npread;i++){ size_t off=((size_t)i*7919%nblk)*BS; ssize_t r=pread(fd,buf,BS,off); sum+=r+buf[0]; }
  double t1=now(), c1=cpu();
  close(fd);
  double c2=cpu(), t2=now();
  for(long i=0;i<nopen;i++){ int f=open(path,O_RDONLY); if(f<0){perror("open2");return 1;} close(f);}
  double t3=now(), c3=cpu();
  printf("pread_wall_ns=%.1f pread_cpu_ns=%.1f oc_wall_ns=%.1f oc_cpu_ns=%.1f npread=%ld nopen=%ld chk=%llu\n",
    (t1-t0)*1e9/npread,(c1-c0)*1e9/npread,(t3-t2)*1e9/nopen,(c3-c2)*1e9/nopen,npread,nopen,sum);
  free(buf); return 0;
}
