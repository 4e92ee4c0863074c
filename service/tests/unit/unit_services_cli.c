/* unit_services_cli.c: the command line of scripts/services.sh that the
 * harness calls (`services.sh VERB DIR [ARGS]`): --help lists every verb
 * the tests use, and a wrong call is refused with exit code 2 and a reason
 * before anything is started. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

/* Runs services.sh with args (shell words), both streams into out; its exit
 * code. */
static int services(const char *args, char *out, size_t cap)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "'%s/scripts/services.sh' %s 2>&1", SECKILL_SOURCE_DIR, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(services_cli, help_lists_every_verb_the_harness_calls)
{
    static const char *verbs[] = {"start DIR",
                                  "stop DIR",
                                  "redis-kill DIR",
                                  "redis-restart DIR",
                                  "pg-kill DIR",
                                  "pg-restart DIR",
                                  "redlock-start DIR",
                                  "redlock-stop DIR",
                                  "redis-auth-start DIR PASSWORD",
                                  "redis-auth-stop DIR",
                                  "cluster-start DIR",
                                  "cluster-stop DIR",
                                  "cluster-node-restart DIR PORT",
                                  "zk-start DIR",
                                  "zk-stop DIR",
                                  "nginx-start DIR PORT UPSTREAM...",
                                  "nginx-stop DIR",
                                  "stop-all DIR"};
    char out[4096];
    cr_assert_eq(services("--help", out, sizeof(out)), 0, "%s", out);
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        cr_expect(strstr(out, verbs[i]), "--help does not list '%s':\n%s", verbs[i], out);
}

Test(services_cli, a_wrong_call_is_refused_with_its_reason)
{
    char out[4096];
    cr_expect_eq(services("", out, sizeof(out)), 2, "%s", out);
    cr_expect(strstr(out, "usage:"), "%s", out);
    cr_expect_eq(services("no-such-verb /tmp", out, sizeof(out)), 2, "%s", out);
    cr_expect(strstr(out, "no verb 'no-such-verb'"), "%s", out);
    cr_expect_eq(services("redis-kill", out, sizeof(out)), 2, "%s", out);
    cr_expect(strstr(out, "redis-kill takes DIR"), "%s", out);
    cr_expect_eq(services("redis-kill /tmp extra", out, sizeof(out)), 2, "%s", out);
    cr_expect_eq(services("nginx-start /tmp", out, sizeof(out)), 2, "%s", out);
    cr_expect(strstr(out, "nginx-start takes DIR PORT UPSTREAM..."), "%s", out);
}
