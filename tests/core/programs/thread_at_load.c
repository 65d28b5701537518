/* A library that starts a thread when it is loaded, as a site's monitoring
   agent preloaded into every process does: the thread blocks no signal.
   Preloaded into `strata run` by launcher_test.cc. */
#include <pthread.h>
#include <unistd.h>

static void* idle(void* unused) {
  (void)unused;
  for (;;) pause();
  return 0;
}

__attribute__((constructor)) static void start_idle_thread(void) {
  pthread_t t;
  if (pthread_create(&t, 0, idle, 0) == 0) pthread_detach(t);
}
