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
 *
 * Isolation (docs/security.md, "Secrets"): the command cannot see the server. Where the kernel allows it (root,
 * or unprivileged user namespaces), the command runs in a new pid namespace with its own /proc (a new mount
 * namespace, mounts private): the server, kiln's other processes and every process outside have no /proc entry
 * there, so neither their environ (which keeps a process's INITIAL environment, secrets included), cmdline,
 * maps nor mem can be opened. The first process of the namespace (its init) is this reaper's child; it drops
 * CAP_SYS_ADMIN and CAP_SYS_PTRACE from the bounding set (no umount of the fresh /proc to reach the one
 * beneath, no setns, no ptrace), then forks the command, waits for it and exits with its status; when it
 * exits, the kernel kills everything left in the namespace.
 *   kiln-reaper --probe   exits 0 when isolation works here, else 1 with the reason on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
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

/* Write `text` to `path` (a /proc/self/{uid,gid}_map or setgroups file). */
static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Put the children of this process in a new pid namespace: as root directly, else inside a new user namespace
 * that maps our own uid and gid to themselves (so the command runs as the same user, with no capability once
 * it execs). 0 on success; -1 (nothing changed) or -2 (in a user namespace without its maps: a command must
 * not run here) with `why` set otherwise. */
static int new_pid_namespace(const char **why) {
  if (unshare(CLONE_NEWPID) == 0) return 0;
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) {
    *why = "the kernel refuses new pid namespaces to this user (not root, and unprivileged user namespaces are off)";
    return -1;
  }
  char map[64];
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  if (write_file("/proc/self/uid_map", map) != 0) { *why = "cannot write the user namespace's uid_map"; return -2; }
  write_file("/proc/self/setgroups", "deny\n");
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  if (write_file("/proc/self/gid_map", map) != 0) { *why = "cannot write the user namespace's gid_map"; return -2; }
  return 0;
}

/* In the namespace's init, before the command: a mount namespace of its own whose /proc shows only this pid
 * namespace, and no capability that could undo it. 0 on success; -1 with `why` set otherwise. */
static int seal_namespace(const char **why) {
  if (unshare(CLONE_NEWNS) != 0) { *why = "cannot make a mount namespace"; return -1; }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) { *why = "cannot make the mounts private"; return -1; }
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) { *why = "cannot mount a fresh /proc"; return -1; }
  static const int dropped[] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE};
  for (unsigned i = 0; i < sizeof dropped / sizeof dropped[0]; i++) {
    if (prctl(PR_CAPBSET_DROP, dropped[i], 0, 0, 0) != 0 && errno != EINVAL) { *why = "cannot drop CAP_SYS_ADMIN and CAP_SYS_PTRACE"; return -1; }
  }
  return 0;
}

/* The namespace's init: runs the command as its child, reaps every orphan, exits with the command's status
 * (128 + signal when a signal ended it). Its exit makes the kernel kill whatever is left in the namespace. */
static int namespace_init(char **argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* should the reaper itself be killed */
  pid_t cmd = fork();
  if (cmd < 0) { perror("kiln-reaper: fork"); return 125; }
  if (cmd == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    execvp(argv[0], argv);
    fprintf(stderr, "kiln-reaper: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  for (;;) {
    int st;
    pid_t p = waitpid(-1, &st, 0);
    if (p == cmd) {
      if (WIFEXITED(st)) return WEXITSTATUS(st);
      if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
      return 1;
    }
    if (p < 0 && errno != EINTR) return 1;
  }
}

/* --probe: whether isolation works here (the server asks once, and says so when it does not). */
static int probe(void) {
  const char *why = NULL;
  if (new_pid_namespace(&why) != 0) { fprintf(stderr, "%s\n", why); return 1; }
  pid_t child = fork();
  if (child < 0) { perror("fork"); return 1; }
  if (child == 0) {
    if (seal_namespace(&why) != 0) { fprintf(stderr, "%s\n", why); _exit(1); }
    /* The fresh /proc shows this namespace only: we are its pid 1. */
    char self[32] = {0};
    if (readlink("/proc/self", self, sizeof self - 1) < 0 || strcmp(self, "1") != 0) { fprintf(stderr, "the fresh /proc does not show the new pid namespace\n"); _exit(1); }
    _exit(0);
  }
  int st = 0;
  while (waitpid(child, &st, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) return probe();
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

  /* Isolated when the kernel allows it; else the command runs as before (the server said so at start). */
  const char *why = NULL;
  int ns = new_pid_namespace(&why);
  if (ns == -2) {
    fprintf(stderr, "kiln-reaper: cannot isolate the command: %s\n", why);
    return 125;
  }
  int isolated = ns == 0;

  pid_t child = fork();
  if (child < 0) {
    perror("kiln-reaper: fork");
    return 125;
  }
  if (child == 0 && isolated) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    if (seal_namespace(&why) != 0) {
      /* The pid namespace exists but could not be sealed: refuse rather than run half isolated. */
      fprintf(stderr, "kiln-reaper: cannot isolate the command: %s\n", why);
      _exit(125);
    }
    _exit(namespace_init(argv + 2));
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
