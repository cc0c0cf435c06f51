/*
 * kiln-reaper: runs one command so that nothing it starts can outlive it.
 *
 *   kiln-reaper -- program [args...]
 *
 * kiln starts every command through this (host/capabilities/commands/processes.ts). A process group is not enough:
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
 * maps nor mem can be opened. The first process of the namespace (its init) is this reaper's child; before it
 * forks the command it makes the host's kernel settings read-only in that mount namespace (/proc/sys,
 * /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs, /sys and every mount beneath them: core_pattern and the
 * other usermode helpers the kernel runs OUTSIDE the namespace, as root), masks /proc/kcore, /proc/keys,
 * /proc/timer_list and the like, then keeps of its capabilities only Docker's default set less CAP_MKNOD,
 * CAP_NET_RAW and CAP_NET_BIND_SERVICE (kept_caps), in every set, and sets no_new_privs: a root command has no CAP_SYS_ADMIN (no mount, umount,
 * setns), no CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_DAC_READ_SEARCH, and cannot get one back. It
 * waits for the command and exits with its status; when it exits, the kernel kills everything left in the
 * namespace.
 * File descriptors: the reaper closes every descriptor above 2 first, so a command gets only its stdio, never
 * one kiln inherited without close-on-exec.
 *   kiln-reaper --probe   exits 0 when isolation works here, else 1 with the reason on stderr.
 */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
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

/* What a command keeps of root's capabilities: Docker's default set, less CAP_MKNOD (no device node to
 * reach a disk or memory through), CAP_NET_RAW (a raw socket reads the machine's loopback traffic: another
 * extension's secret header, the HTTP server's bearer token) and CAP_NET_BIND_SERVICE (a low port the
 * operator's services expect). Everything else is dropped from every set before the command runs: the
 * ones that reach past the namespace (CAP_SYS_ADMIN: mount, setns, the kernel's usermode helpers;
 * CAP_SYS_PTRACE; CAP_SYS_MODULE; CAP_SYS_RAWIO; CAP_DAC_READ_SEARCH: open_by_handle_at; CAP_BPF, CAP_PERFMON,
 * CAP_NET_ADMIN, CAP_SYS_TIME, ...) and any the kernel adds later. */
static const int kept_caps[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID,
                                CAP_SETUID, CAP_SETPCAP, CAP_SYS_CHROOT,
                                CAP_AUDIT_WRITE, CAP_SETFCAP};

static unsigned long long kept_mask(void) {
  unsigned long long m = 0;
  for (unsigned i = 0; i < sizeof kept_caps / sizeof kept_caps[0]; i++) m |= 1ULL << kept_caps[i];
  return m;
}

/* Paths of the host's kernel settings a command could write to act outside the namespace (core_pattern and
 * the other usermode helpers, sysrq, interrupts, buses, /sys): bound read-only, submounts included. */
static const char *const readonly_paths[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/sys"};
/* Files that show kernel memory, keys or timers of other processes: /dev/null over them. */
static const char *const masked_files[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/timer_stats", "/proc/latency_stats", "/proc/sched_debug"};
/* Directories of firmware and device tables: an empty read-only tmpfs over them. */
static const char *const masked_dirs[] = {"/proc/acpi", "/proc/scsi", "/sys/firmware"};

/* "\040" and the like in a /proc/self/mountinfo path, in place. */
static void unescape(char *s) {
  char *o = s;
  for (char *i = s; *i; i++) {
    if (i[0] == '\\' && i[1] >= '0' && i[1] <= '7' && i[2] >= '0' && i[2] <= '7' && i[3] >= '0' && i[3] <= '7') {
      *o++ = (char)((i[1] - '0') * 64 + (i[2] - '0') * 8 + (i[3] - '0'));
      i += 3;
    } else {
      *o++ = *i;
    }
  }
  *o = 0;
}

/* Remount one bind mount read-only, keeping its other flags (which a user namespace may not clear). */
static int remount_readonly(const char *path) {
  struct statvfs sv;
  if (statvfs(path, &sv) != 0) return -1;
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY;
  if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return mount(NULL, path, NULL, flags, NULL);
}

/* Make `path` and every mount beneath it read-only in this mount namespace (absent: nothing to do). */
static int bind_readonly(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
  if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) != 0) return -1;
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_RDONLY;
  if (mount_setattr(AT_FDCWD, path, AT_RECURSIVE, &attr, sizeof attr) == 0) return 0;
  if (errno != ENOSYS) return -1;
  /* Before Linux 5.12: each mount at or beneath `path`, from /proc/self/mountinfo (field 5). */
  FILE *f = fopen("/proc/self/mountinfo", "r");
  if (!f) return -1;
  size_t len = strlen(path);
  char line[4096];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    char *save = NULL, *field = strtok_r(line, " ", &save);
    for (int i = 1; field && i < 5; i++) field = strtok_r(NULL, " ", &save);
    if (!field) continue;
    unescape(field);
    if (strncmp(field, path, len) != 0 || (field[len] != 0 && field[len] != '/')) continue;
    if (remount_readonly(field) != 0) rc = -1;
  }
  fclose(f);
  return rc;
}

/* Cover `path`: a file with /dev/null, a directory with an empty read-only tmpfs (absent: nothing to do). */
static int mask(const char *path, int dir) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
  if (dir) return mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555");
  return mount("/dev/null", path, NULL, MS_BIND, NULL);
}

/* Keep only kept_caps in the bounding, permitted, effective, inheritable and ambient sets, and set
 * no_new_privs (no setuid or file-capability binary gives any back). 0 on success. */
static int drop_capabilities(const char **why) {
  unsigned long long keep = kept_mask();
  for (int cap = 0; cap < 64; cap++) {
    if (keep & (1ULL << cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) { *why = "cannot drop capabilities from the bounding set"; return -1; }
  }
  struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &head, data) != 0) { *why = "cannot read the capability sets"; return -1; }
  for (int i = 0; i < 2; i++) {
    unsigned int m = (unsigned int)(keep >> (32 * i));
    data[i].effective &= m;
    data[i].permitted &= m;
    data[i].inheritable &= m;
  }
  if (syscall(SYS_capset, &head, data) != 0) { *why = "cannot drop capabilities"; return -1; }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) { *why = "cannot clear the ambient capabilities"; return -1; }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { *why = "cannot set no_new_privs"; return -1; }
  return 0;
}

/* In the namespace's init, before the command: a mount namespace of its own whose /proc shows only this pid
 * namespace, the host's kernel settings read-only (readonly_paths) or masked, and only kept_caps left, so that
 * nothing can undo it. 0 on success; -1 with `why` set otherwise. */
static int seal_namespace(const char **why) {
  if (unshare(CLONE_NEWNS) != 0) { *why = "cannot make a mount namespace"; return -1; }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) { *why = "cannot make the mounts private"; return -1; }
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) { *why = "cannot mount a fresh /proc"; return -1; }
  for (unsigned i = 0; i < sizeof readonly_paths / sizeof readonly_paths[0]; i++) {
    if (bind_readonly(readonly_paths[i]) != 0) { *why = "cannot make /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs and /sys read-only"; return -1; }
  }
  for (unsigned i = 0; i < sizeof masked_files / sizeof masked_files[0]; i++) {
    if (mask(masked_files[i], 0) != 0) { *why = "cannot mask /proc/kcore, /proc/keys and /proc/timer_list"; return -1; }
  }
  for (unsigned i = 0; i < sizeof masked_dirs / sizeof masked_dirs[0]; i++) {
    if (mask(masked_dirs[i], 1) != 0) { *why = "cannot mask /proc/acpi, /proc/scsi and /sys/firmware"; return -1; }
  }
  return drop_capabilities(why);
}

/* Close every file descriptor above 2: a command gets none that kiln inherited without close-on-exec. */
static void close_inherited_fds(void) {
  if (close_range(3, ~0U, 0) == 0) return;
  DIR *d = opendir("/proc/self/fd");
  if (!d) {
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (max > 0 && max < 1 << 20 ? max : 1 << 20); fd++) close((int)fd);
    return;
  }
  int fds[1024], n = 0, self = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) && n < 1024) {
    int fd = atoi(e->d_name);
    if (fd > 2 && fd != self) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) close(fds[i]);
  if (n == 1024) close_inherited_fds(); /* more than one batch */
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
  close_inherited_fds();
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
