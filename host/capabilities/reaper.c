/*
 * kiln-reaper: runs one command so that nothing it starts can outlive it.
 *
 *   kiln-reaper -- program [args...]
 *
 * kiln starts every command through this (host/capabilities/processes.ts). A process group is not enough:
 * a child can `setsid` out of it. So the reaper
 *  - is a child subreaper (PR_SET_CHILD_SUBREAPER): every orphaned descendant, setsid or not, becomes its
 *    child instead of init's;
 *  - asks to be sent SIGTERM when kiln dies (PR_SET_PDEATHSIG), even when kiln is killed with SIGKILL;
 *  - when the command exits, or on SIGTERM/SIGINT/SIGHUP, kills every descendant it has (killing a child
 *    orphans the child's children, which come to the reaper in turn) until none is left, then exits with the
 *    command's status (128 + signal when it was stopped).
 * What it cannot stop: a descendant that double-forks *and* is re-parented past it (impossible while it is a
 * subreaper and alive), or a SIGKILL sent to the reaper itself (kiln never sends one first).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

/* The pids whose parent is us, from /proc/self/task/<tid>/children (one thread: ours). */
static int children(pid_t *out, int max) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0;
  long pid;
  while (n < max && fscanf(f, "%ld", &pid) == 1) out[n++] = (pid_t)pid;
  fclose(f);
  return n;
}

/* Kill descendants until none is left (bounded: a fork bomb gets at most a few seconds). */
static void kill_descendants(void) {
  static pid_t pids[4096];
  struct timespec pause = {0, 2 * 1000 * 1000};
  for (int round = 0; round < 2000; round++) {
    int n = children(pids, 4096);
    for (int i = 0; i < n; i++) {
      kill(-pids[i], SIGKILL); /* its process group, if it leads one */
      kill(pids[i], SIGKILL);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    if (n == 0) {
      if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD) return;
    }
    nanosleep(&pause, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc < 3 || strcmp(argv[1], "--") != 0) {
    fprintf(stderr, "usage: kiln-reaper -- program [args...]\n");
    return 2;
  }
  pid_t parent = getppid();
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    perror("kiln-reaper: prctl");
    return 125;
  }
  if (getppid() != parent) return 125; /* kiln died before we could notice */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  pid_t child = fork();
  if (child < 0) {
    perror("kiln-reaper: fork");
    return 125;
  }
  if (child == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* should the reaper itself be killed */
    execvp(argv[2], argv + 2);
    fprintf(stderr, "kiln-reaper: cannot run %s: %s\n", argv[2], strerror(errno));
    _exit(127);
  }
  int status = 0;
  for (;;) {
    if (stop_signal) break;
    int st;
    pid_t p = waitpid(-1, &st, 0);
    if (p == child) { status = st; break; }
    if (p < 0 && errno != EINTR) break;
  }
  kill_descendants();
  if (stop_signal) return 128 + stop_signal;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}
