/*
 * agileos-sandbox-exec: the last step inside the sandbox, between bubblewrap and the program.
 *
 * Usage (by agileos-sandbox only): agileos-sandbox-exec FD PROGRAM [ARGS...]
 *
 * It checks what the program will run with (a uid and gid that are not 0, no capability in any
 * set, no_new_privs, a seccomp filter), then writes "started\n" to FD, closes it and execs
 * PROGRAM. agileos-sandbox reads FD: without that line the sandbox was not set up (bubblewrap
 * failed, or a check here failed) and it exits 125, so a setup failure is never mistaken for the
 * program's own exit status. If exec fails, the line has been written and the exit is 127, as
 * for a shell.
 *
 * Linked statically: LD_PRELOAD (the AgileOS shim) is set for the program and must not be
 * loaded, or even looked for, here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char* what) {
  fprintf(stderr, "agileos-sandbox: inside the sandbox: %s\n", what);
  return 125;
}

/* The value of "Name:" in /proc/self/status, or "" (at most size - 1 characters). */
static void statusField(const char* name, char* value, size_t size) {
  value[0] = '\0';
  FILE* status = fopen("/proc/self/status", "re");
  if (status == NULL) return;
  char line[256];
  const size_t length = strlen(name);
  while (fgets(line, sizeof line, status) != NULL) {
    if (strncmp(line, name, length) == 0 && line[length] == ':') {
      const char* start = line + length + 1;
      while (*start == ' ' || *start == '\t') ++start;
      snprintf(value, size, "%s", start);
      value[strcspn(value, "\n")] = '\0';
      break;
    }
  }
  fclose(status);
}

int main(int argc, char** argv) {
  if (argc < 3) return fail("usage: agileos-sandbox-exec FD PROGRAM [ARGS...]");
  char* end = NULL;
  const long fd = strtol(argv[1], &end, 10);
  if (end == argv[1] || *end != '\0' || fd < 3 || fd > 1 << 20) return fail("bad status descriptor");
  if (getuid() == 0 || geteuid() == 0 || getgid() == 0 || getegid() == 0)
    return fail("running as uid or gid 0");
  char value[128];
  static const char* const kCapabilitySets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
  for (size_t i = 0; i < sizeof kCapabilitySets / sizeof kCapabilitySets[0]; ++i) {
    statusField(kCapabilitySets[i], value, sizeof value);
    if (strspn(value, "0") != strlen(value) || value[0] == '\0') return fail("a capability is left");
  }
  statusField("NoNewPrivs", value, sizeof value);
  if (strcmp(value, "1") != 0) return fail("no_new_privs is not set");
  statusField("Seccomp", value, sizeof value);
  if (strcmp(value, "2") != 0) return fail("no seccomp filter");
  static const char kStarted[] = "started\n";
  if (write((int)fd, kStarted, sizeof kStarted - 1) != (ssize_t)(sizeof kStarted - 1)) {
    return fail("cannot report the start");
  }
  close((int)fd);
  execvp(argv[2], argv + 2);
  fprintf(stderr, "agileos-sandbox: exec %s: %s\n", argv[2], strerror(errno));
  return 127;
}
