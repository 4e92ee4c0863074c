/* e2e_cli.c: the three binaries as an operator meets them: --help,
 * --version and --print-config answer and exit 0 (secrets masked); a bad
 * setting stops start-up with exit 2 and a message naming it; seckill-admin
 * buyer-token prints tokens that verify. No server is started. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <criterion/criterion.h>

#include "buyer_token.h"
#include "clock.h"
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
                     "--print-config --order-lock-ttl-ms 1234");
        cr_expect_eq(rc, 0, "%s", out);
        cr_expect(strstr(out, "port = 9999\n"), "environment: %s", out);
        cr_expect(strstr(out, "order_lock_ttl_ms = 1234\n"), "flag: %s", out);
        cr_expect(strstr(out, "admin_token = ****\n"), "%s", out);
        cr_expect_null(strstr(out, "very-secret"), "a secret was printed: %s", out);
    }
}

Test(cli, a_retired_key_starts_all_the_same_with_a_warning_naming_what_replaced_it)
{
    for (size_t i = 0; i < 3; i++) {
        int rc = run("SECKILL_IO_THREADS=4", bins[i], "--print-config --lock-ttl-ms 1234");
        cr_expect_eq(rc, 0, "%s", out);
        cr_expect(strstr(out, "level=warn") && strstr(out, "SECKILL_IO_THREADS: io_threads is no "
                                                           "longer used and is ignored: "),
                  "%s", out);
        cr_expect(strstr(out, "--lock-ttl-ms: lock_ttl_ms is no longer used and is ignored: ") &&
                      strstr(out, "order_lock_ttl_ms"),
                  "%s", out);
        cr_expect_null(strstr(out, "\nlock_ttl_ms ="), "a retired key is not printed: %s", out);
        cr_expect(strstr(out, "order_lock_ttl_ms = 5000\n"), "%s", out);
    }
}

Test(cli, a_bad_setting_stops_start_up_with_exit_2_naming_it)
{
    for (size_t i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof(args), "%s --port abc", commands[i]);
        cr_expect_eq(run("", bins[i], args), 2, "%s", out);
        cr_expect(strstr(out, "port: expected an integer"), "%s", out);
        cr_expect_eq(run("SECKILL_LOG_LEVEL=loud", bins[i], commands[i]), 2, "%s", out);
        cr_expect(strstr(out, "SECKILL_LOG_LEVEL") && strstr(out, "log_level: expected"), "%s",
                  out);
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

Test(cli, buyer_auth_token_without_a_long_secret_stops_the_binaries_that_read_it)
{
    for (size_t i = 0; i < 3; i += 2) { /* the server and the admin tool */
        cr_expect_eq(
            run("SECKILL_BUYER_AUTH=token SECKILL_BUYER_TOKEN_SECRET=short", bins[i], commands[i]),
            2, "%s", out);
        cr_expect(strstr(out, "buyer_token_secret") && strstr(out, "at least 32 bytes"), "%s", out);
        cr_expect_null(strstr(out, "short"), "the secret was printed: %s", out);
    }
    /* The worker reads no buyer key: it need not hold the buyers' secret. */
    cr_expect_eq(run("SECKILL_BUYER_AUTH=token SECKILL_BUYER_TOKEN_SECRET=short",
                     SECKILL_WORKER_BIN, "--print-config"),
                 0, "%s", out);
}

/* Whether the help in out lists the flag (a whole flag: "--port" is not "--redis-port"). */
static int lists(const char *flag)
{
    char line[64];
    snprintf(line, sizeof(line), "\n  %s ", flag);
    return strstr(out, line) != NULL;
}

Test(cli, each_binary_s_help_lists_the_keys_it_reads)
{
    cr_assert_eq(run("", SECKILL_SERVER_BIN, "--help"), 0, "%s", out);
    cr_expect(lists("--port") && lists("--lab-threads") && lists("--buyer-auth"), "%s", out);
    cr_expect(!lists("--worker-id") && !lists("--worker-batch-size"), "%s", out);
    cr_assert_eq(run("", SECKILL_WORKER_BIN, "--help"), 0, "%s", out);
    cr_expect(lists("--worker-id") && lists("--worker-expiry-ms") && lists("--pg-conninfo"), "%s",
              out);
    cr_expect(!lists("--port") && !lists("--lab-threads") && !lists("--buyer-auth"), "%s", out);
    cr_assert_eq(run("", SECKILL_ADMIN_BIN, "--help"), 0, "%s", out);
    cr_expect(lists("--redis-port") && lists("--buyer-token-secret"), "%s", out);
    cr_expect(!lists("--port") && !lists("--worker-id") && !lists("--max-connections"), "%s", out);
}

#define TOKEN_SECRET "e2e-cli-buyer-token-secret-0123456789"
#define TOKEN_ENV "SECKILL_BUYER_TOKEN_SECRET=" TOKEN_SECRET

/* The token seckill-admin printed (out without its newline), verified at
 * now_s; *expiry is the one it carries. */
static buyer_token_result verify_printed(int64_t now_s, int64_t *user, int64_t *expiry)
{
    char token[BUYER_TOKEN_MAX + 16], header[BUYER_TOKEN_MAX + 32];
    size_t len = strlen(out);
    cr_assert(len > 1 && len < sizeof(token) && out[len - 1] == '\n', "one line: %s", out);
    memcpy(token, out, len - 1);
    token[len - 1] = '\0';
    cr_assert_null(strchr(token, '\n'), "nothing but the token: %s", out);
    *expiry = strtoll(strchr(token, '.') + 1, NULL, 10);
    snprintf(header, sizeof(header), "Bearer %s", token);
    return buyer_token_verify(TOKEN_SECRET, header, now_s, user);
}

Test(cli, admin_buyer_token_prints_a_token_the_server_accepts_for_an_hour)
{
    int64_t before = clock_wall_s();
    cr_assert_eq(run(TOKEN_ENV, SECKILL_ADMIN_BIN, "buyer-token 42"), 0, "%s", out);
    int64_t after = clock_wall_s(), user = -1, expiry = 0;
    cr_assert_eq(verify_printed(after, &user, &expiry), BUYER_TOKEN_OK, "%s", out);
    cr_assert_eq(user, 42);
    cr_assert(expiry >= before + 3600 && expiry <= after + 3600, "expiry %lld", (long long)expiry);
    cr_assert_eq(verify_printed(expiry, &user, &expiry), BUYER_TOKEN_EXPIRED);
}

Test(cli, admin_buyer_token_takes_a_ttl_and_the_token_auth_config)
{
    int64_t before = clock_wall_s();
    cr_assert_eq(run("SECKILL_BUYER_AUTH=token " TOKEN_ENV, SECKILL_ADMIN_BIN,
                     "buyer-token 9007199254740991 --ttl 60"),
                 0, "%s", out);
    int64_t after = clock_wall_s(), user = -1, expiry = 0;
    cr_assert_eq(verify_printed(after, &user, &expiry), BUYER_TOKEN_OK, "%s", out);
    cr_assert_eq(user, 9007199254740991LL);
    cr_assert(expiry >= before + 60 && expiry <= after + 60, "expiry %lld", (long long)expiry);
    cr_assert_eq(run(TOKEN_ENV, SECKILL_ADMIN_BIN, "buyer-token 7 --ttl=5"), 0, "%s", out);
    cr_assert_eq(verify_printed(after + 6, &user, &expiry), BUYER_TOKEN_EXPIRED, "%s", out);
}

Test(cli, admin_buyer_token_without_its_secret_is_exit_2_naming_it)
{
    cr_assert_eq(run("", SECKILL_ADMIN_BIN, "buyer-token 42"), 2, "%s", out);
    cr_assert(strstr(out, "buyer_token_secret") && strstr(out, "SECKILL_BUYER_TOKEN_SECRET"), "%s",
              out);
    cr_assert_eq(run("SECKILL_BUYER_TOKEN_SECRET=too-short", SECKILL_ADMIN_BIN, "buyer-token 42"),
                 2, "%s", out);
    cr_assert(strstr(out, "at least 32 bytes"), "%s", out);
    cr_assert_null(strstr(out, "too-short"), "%s", out);
}

Test(cli, admin_buyer_token_refuses_a_bad_user_or_ttl_with_exit_2)
{
    const char *bad[] = {"buyer-token",
                         "buyer-token --ttl 60",
                         "buyer-token 0",
                         "buyer-token -1",
                         "buyer-token 042",
                         "buyer-token 4x",
                         "buyer-token 9007199254740992",
                         "buyer-token 42 --ttl",
                         "buyer-token 42 --ttl 0",
                         "buyer-token 42 --ttl -5",
                         "buyer-token 42 --ttl 1h",
                         "buyer-token 42 --ttl 31536001",
                         "buyer-token 42 --json",
                         "reconcile --ttl 60"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(run(TOKEN_ENV, SECKILL_ADMIN_BIN, bad[i]), 2, "%s: %s", bad[i], out);
        cr_expect(strstr(out, "seckill-admin: "), "%s: %s", bad[i], out);
        cr_expect_null(strstr(out, TOKEN_SECRET), "%s: %s", bad[i], out);
    }
}

Test(cli, admin_help_names_buyer_token)
{
    cr_assert_eq(run("", SECKILL_ADMIN_BIN, "--help"), 0, "%s", out);
    cr_assert(strstr(out, "seckill-admin buyer-token USER [--ttl S]"), "%s", out);
    cr_assert(strstr(out, "--buyer-token-secret"), "%s", out);
}
