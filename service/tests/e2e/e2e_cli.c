/* e2e_cli.c: the three binaries as an operator meets them: --help,
 * --version and --print-config answer and exit 0 (secrets masked); a bad
 * setting stops start-up with exit 2 and a message naming it. No server
 * is started. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "version.h"

static char out[1 << 16];

/* Runs `bin args` with extra environment (a "K=V K=V" prefix, may be "");
 * output (both streams) in out; returns the exit code. */
static int run(const char *env, const char *bin, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "env %s '%s' %s 2>&1", env, bin, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *bins[] = {SECKILL_SERVER_BIN, SECKILL_WORKER_BIN, SECKILL_ADMIN_BIN};
/* What each binary takes before its options (seckill-admin: its command). */
static const char *commands[] = {"", "", "reconcile"};

Test(cli, help_and_version_answer_and_exit_0_on_every_binary)
{
    for (size_t i = 0; i < 3; i++) {
        cr_expect_eq(run("", bins[i], "--help"), 0, "%s --help: %s", bins[i], out);
        cr_expect(strstr(out, "Usage:") && strstr(out, "--redis-port"), "%s", out);
        cr_expect_eq(run("", bins[i], "--version"), 0, "%s", out);
        cr_expect(strstr(out, SECKILL_VERSION), "%s --version: %s", bins[i], out);
        cr_expect_not(strstr(out, "Usage:"), "%s --version says only the version: %s", bins[i],
                      out);
    }
}

Test(cli, print_config_shows_the_result_with_secrets_masked)
{
    for (size_t i = 0; i < 3; i++) {
        int rc = run("SECKILL_ADMIN_TOKEN=very-secret SECKILL_PORT=9999", bins[i],
                     "--print-config --lock-ttl-ms 1234");
        cr_expect_eq(rc, 0, "%s", out);
        cr_expect(strstr(out, "port = 9999\n"), "environment: %s", out);
        cr_expect(strstr(out, "lock_ttl_ms = 1234\n"), "flag: %s", out);
        cr_expect(strstr(out, "admin_token = ****\n"), "%s", out);
        cr_expect_null(strstr(out, "very-secret"), "a secret was printed: %s", out);
    }
}

Test(cli, a_bad_setting_stops_start_up_with_exit_2_naming_it)
{
    for (size_t i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof(args), "%s --port abc", commands[i]);
        cr_expect_eq(run("", bins[i], args), 2, "%s", out);
        cr_expect(strstr(out, "port: expected an integer"), "%s", out);
        cr_expect_eq(run("SECKILL_REDIS_PORT=70000", bins[i], commands[i]), 2, "%s", out);
        cr_expect(strstr(out, "SECKILL_REDIS_PORT") && strstr(out, "out of range"), "%s", out);
        snprintf(args, sizeof(args), "%s --no-such-option", commands[i]);
        cr_expect_eq(run("", bins[i], args), 2, "%s", out);
        cr_expect(strstr(out, "--no-such-option"), "%s", out);
    }
}

Test(cli, a_bad_config_file_is_reported_with_its_line)
{
    char path[] = "/tmp/seckill-cli-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("# a comment\nport = 8081\nworker_batch_size = many\n", f);
    fclose(f);
    for (size_t i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof(args), "%s --config %s", commands[i], path);
        cr_expect_eq(run("", bins[i], args), 2, "%s", out);
        cr_expect(strstr(out, ":3:") && strstr(out, "worker_batch_size"), "%s", out);
    }
    remove(path);
}
