/* unit_config.c: defaults, key parsing, the file format, and the start-up
 * precedence defaults < file < environment < flags of config.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "config.h"
#include "version.h"

extern char **environ;

/* The suite may run under `make test`, which exports SECKILL_* for the
 * servers it started: every test starts from an environment without them. */
static void clear_seckill_env(void)
{
    char *names[128];
    size_t n = 0;
    for (char **e = environ; *e && n < 128; e++) {
        if (strncmp(*e, "SECKILL_", 8) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        names[n] = strndup(*e, len);
        cr_assert_not_null(names[n]);
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        unsetenv(names[i]);
        free(names[i]);
    }
}

TestSuite(config, .init = clear_seckill_env);

/* A temporary config file holding text; the caller unlinks and frees it. */
static char *temp_file(const char *text)
{
    char *path = strdup("/tmp/seckill-unit-config-XXXXXX");
    cr_assert_not_null(path);
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp failed");
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

/* Runs config_load over argv (NULL-terminated, argv[0] included) with the
 * output captured; *printed is the output (caller frees). */
static config_result load(config *cfg, char **argv, char **printed, char *err, size_t errlen)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    size_t size = 0;
    char *text = NULL;
    FILE *out = open_memstream(&text, &size);
    cr_assert_not_null(out);
    err[0] = '\0';
    config_result rc = config_load(cfg, "seckill-test", argc, argv, out, err, errlen);
    fclose(out);
    if (printed)
        *printed = text;
    else
        free(text);
    return rc;
}

Test(config, defaults_are_the_documented_ones)
{
    config cfg;
    config_init(&cfg);
    cr_assert_str_eq(cfg.host, "127.0.0.1");
    cr_assert_eq(cfg.port, 8080);
    cr_assert_eq(cfg.http_threads, 0);
    cr_assert_eq(cfg.pool_threads, 4);
    cr_assert_eq(cfg.max_connections, 16384);
    cr_assert_eq(cfg.connection_timeout_s, 30);
    cr_assert_eq(cfg.max_body_bytes, 4096);
    cr_assert_str_eq(cfg.admin_token, "");
    cr_assert_eq(cfg.allow_anonymous, 0);
    cr_assert_eq(cfg.order_lock_ttl_ms, 5000);
    cr_assert_str_eq(cfg.redis_host, "127.0.0.1");
    cr_assert_eq(cfg.redis_port, 6379);
    cr_assert_str_eq(cfg.redis_password, "");
    cr_assert_eq(cfg.redis_timeout_ms, 2000);
    cr_assert_str_eq(cfg.redis_cluster, "");
    cr_assert_str_eq(cfg.pg_conninfo, "host=127.0.0.1 port=5432 dbname=seckill user=seckill");
    cr_assert_str_eq(cfg.worker_id, "1");
    cr_assert_eq(cfg.worker_batch_size, 500);
    cr_assert_eq(cfg.worker_batch_ms, 20);
    cr_assert_eq(cfg.worker_retry_max_ms, 5000);
    cr_assert_str_eq(cfg.log_level, "info");
    cr_assert_eq(cfg.buyer_auth, CONFIG_BUYER_AUTH_NONE);
    cr_assert_str_eq(cfg.buyer_token_secret, "");
    cr_assert_eq(cfg.payment_timeout_s, 900);
    cr_assert_eq(cfg.webhook_storm_rate, 1000);
    cr_assert_eq(cfg.webhook_storm_wait_ms, 60000);
    config_free(&cfg);
}

Test(config, free_twice_and_free_of_null_are_harmless)
{
    config cfg;
    config_init(&cfg);
    config_free(&cfg);
    config_free(&cfg);
    config_free(NULL);
}

Test(config, set_accepts_each_type)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "port", "9090", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.port, 9090);
    cr_assert_eq(config_set(&cfg, "redis_host", "redis.local", err, sizeof(err)), 0);
    cr_assert_str_eq(cfg.redis_host, "redis.local");
    /* Replacing a string frees the old one (the sanitizer build checks). */
    cr_assert_eq(config_set(&cfg, "redis_host", "other", err, sizeof(err)), 0);
    cr_assert_str_eq(cfg.redis_host, "other");
    const char *yes[] = {"1", "true", "TRUE", "yes", "On"};
    const char *no[] = {"0", "false", "False", "no", "OFF"};
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(config_set(&cfg, "allow_anonymous", yes[i], err, sizeof(err)), 0, "%s",
                     yes[i]);
        cr_assert_eq(cfg.allow_anonymous, 1, "%s", yes[i]);
        cr_assert_eq(config_set(&cfg, "allow_anonymous", no[i], err, sizeof(err)), 0, "%s", no[i]);
        cr_assert_eq(cfg.allow_anonymous, 0, "%s", no[i]);
    }
    config_free(&cfg);
}

/* A config file written for an older release still starts: a key it no
 * longer uses is ignored (with a warning), while a misspelt one is not. */
Test(config, set_ignores_a_retired_key_and_refuses_an_unknown_one)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "io_threads", "4", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(config_set(&cfg, "io_thread", "4", err, sizeof(err)), -1);
    cr_assert(strstr(err, "unknown key") != NULL, "%s", err);
    config_free(&cfg);
}

/* lock_ttl_ms is retired as io_threads is: its value, even a bad one, is not
 * read, and the key that took its place keeps its own. */
Test(config, a_retired_key_in_a_file_the_environment_or_a_flag_is_ignored)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    char *path = temp_file("lock_ttl_ms = -5\nio_threads = 4\nport = 1000\n");
    setenv("SECKILL_LOCK_TTL_MS", "oops", 1);
    setenv("SECKILL_IO_THREADS", "4", 1);
    char *argv[] = {"seckill-test", "--config", path, "--lock-ttl-ms", "7", "--io-threads=2",
                    "--port",       "1001",     NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_OK, "%s", err);
    cr_assert_eq(cfg.port, 1001, "the flag after a retired one's value is read");
    cr_assert_eq(cfg.order_lock_ttl_ms, 5000);
    config_free(&cfg);
    unlink(path);
    free(path);
}

Test(config, the_retired_keys_are_listed_and_none_is_a_key)
{
    size_t n = 0;
    for (const char *name; (name = config_retired_name(n)) != NULL; n++) {
        config cfg;
        char err[CONFIG_ERRLEN] = "";
        config_init(&cfg);
        cr_expect_eq(config_set(&cfg, name, "x", err, sizeof(err)), 0, "%s: %s", name, err);
        config_free(&cfg);
    }
    cr_assert_geq(n, 2, "io_threads and lock_ttl_ms at least");
}

Test(config, set_accepts_the_bounds_of_a_range)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "port", "1", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.port, 1);
    cr_assert_eq(config_set(&cfg, "port", "65535", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.port, 65535);
    config_free(&cfg);
}

Test(config, set_refuses_a_non_integer_naming_the_key)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    config_init(&cfg);
    const char *bad[] = {"abc", "80x", "", "8.5", "0x50", " 81", "+81", "81 ", "081"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        cr_assert_eq(config_set(&cfg, "port", bad[i], err, sizeof(err)), -1, "'%s'", bad[i]);
        cr_assert(strstr(err, "port"), "error for '%s' does not name the key: %s", bad[i], err);
    }
    cr_assert_eq(cfg.port, 8080, "a refused value must leave the old one");
    config_free(&cfg);
}

Test(config, set_refuses_out_of_range_naming_the_key_and_range)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "port", "0", err, sizeof(err)), -1);
    cr_assert(strstr(err, "port") && strstr(err, "65535"), "%s", err);
    cr_assert_eq(config_set(&cfg, "port", "65536", err, sizeof(err)), -1);
    cr_assert(strstr(err, "port"), "%s", err);
    cr_assert_eq(config_set(&cfg, "order_lock_ttl_ms", "-5", err, sizeof(err)), -1);
    cr_assert(strstr(err, "order_lock_ttl_ms"), "%s", err);
    /* Beyond int and long: must be refused, not wrapped. */
    cr_assert_eq(config_set(&cfg, "max_body_bytes", "99999999999999999999999", err, sizeof(err)),
                 -1);
    cr_assert(strstr(err, "max_body_bytes"), "%s", err);
    cr_assert_eq(cfg.port, 8080);
    cr_assert_eq(cfg.order_lock_ttl_ms, 5000);
    cr_assert_eq(cfg.max_body_bytes, 4096);
    config_free(&cfg);
}

/* The binaries set their log level from it after config_start: a bad one
 * stops start-up there, naming the key, for all three alike. */
Test(config, set_refuses_a_log_level_that_is_none_naming_the_key)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "log_level", "loud", err, sizeof(err)), -1);
    cr_assert(strstr(err, "log_level") && strstr(err, "loud"), "%s", err);
    cr_assert_str_eq(cfg.log_level, "info");
    cr_assert_eq(config_set(&cfg, "log_level", "WARN", err, sizeof(err)), 0, "%s", err);
    config_free(&cfg);
}

Test(config, set_refuses_a_bad_boolean_naming_the_key)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "allow_anonymous", "maybe", err, sizeof(err)), -1);
    cr_assert(strstr(err, "allow_anonymous") && strstr(err, "maybe"), "%s", err);
    cr_assert_eq(cfg.allow_anonymous, 0);
    config_free(&cfg);
}

Test(config, set_refuses_an_unknown_key_naming_it)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "prot", "80", err, sizeof(err)), -1);
    cr_assert(strstr(err, "prot"), "%s", err);
    config_free(&cfg);
}

Test(config, parse_text_skips_comments_and_blank_lines)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    const char *text = "# seckill config\n"
                       "\n"
                       "   \n"
                       "port = 9000\n"
                       "  redis_host=cache.local   # trailing comment\n"
                       "\t# indented comment\n"
                       "allow_anonymous = yes\r\n"
                       "admin_token =   s3cret  \n"
                       "order_lock_ttl_ms = 250"; /* no final newline */
    cr_assert_eq(config_parse_text(&cfg, text, "test.conf", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.port, 9000);
    cr_assert_str_eq(cfg.redis_host, "cache.local");
    cr_assert_eq(cfg.allow_anonymous, 1);
    cr_assert_str_eq(cfg.admin_token, "s3cret");
    cr_assert_eq(cfg.order_lock_ttl_ms, 250);
    config_free(&cfg);
}

Test(config, parse_text_of_nothing_changes_nothing)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_parse_text(&cfg, "", "empty.conf", err, sizeof(err)), 0);
    cr_assert_eq(config_parse_text(&cfg, "\n\n# only comments\n", "c.conf", err, sizeof(err)), 0);
    cr_assert_eq(cfg.port, 8080);
    config_free(&cfg);
}

Test(config, parse_text_reports_a_line_without_equals_as_file_and_line)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    const char *text = "# comment\n\nport 9000\n";
    cr_assert_eq(config_parse_text(&cfg, text, "my.conf", err, sizeof(err)), -1);
    cr_assert(strstr(err, "my.conf:3"), "%s", err);
    config_free(&cfg);
}

Test(config, parse_text_reports_a_bad_value_with_file_line_and_key)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    const char *text = "port = 9000\n# x\nredis_port = many\norder_lock_ttl_ms = 700\n";
    cr_assert_eq(config_parse_text(&cfg, text, "my.conf", err, sizeof(err)), -1);
    cr_assert(strstr(err, "my.conf:3"), "%s", err);
    cr_assert(strstr(err, "redis_port"), "%s", err);
    cr_assert_eq(cfg.order_lock_ttl_ms, 5000, "parsing stops at the first bad line");
    config_free(&cfg);
}

Test(config, parse_text_reports_an_unknown_key_with_file_and_line)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_parse_text(&cfg, "port = 1\nnope = 2\n", "x.conf", err, sizeof(err)), -1);
    cr_assert(strstr(err, "x.conf:2") && strstr(err, "nope"), "%s", err);
    config_free(&cfg);
}

Test(config, load_without_anything_keeps_the_defaults)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_OK, "%s", err);
    cr_assert_eq(cfg.port, 8080);
    cr_assert_eq(cfg.redis_port, 6379);
    config_free(&cfg);
}

Test(config, load_precedence_is_file_then_environment_then_flags)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *path = temp_file("port = 1000\nredis_port = 1001\norder_lock_ttl_ms = 1002\n");
    setenv("SECKILL_REDIS_PORT", "2001", 1);
    setenv("SECKILL_ORDER_LOCK_TTL_MS", "2002", 1);
    char *argv[] = {"seckill-test", "--config", path, "--order-lock-ttl-ms", "3002", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_OK, "%s", err);
    cr_assert_eq(cfg.port, 1000, "the file beats the default");
    cr_assert_eq(cfg.redis_port, 2001, "the environment beats the file");
    cr_assert_eq(cfg.order_lock_ttl_ms, 3002, "a flag beats the environment");
    cr_assert_eq(cfg.worker_batch_size, 500, "untouched keys keep their default");
    config_free(&cfg);
    unlink(path);
    free(path);
}

Test(config, a_file_longer_than_one_read_is_read_whole)
{
    /* 3000 comment lines (45 KB, eleven reads of 4 KiB) between two keys. */
    size_t cap = 3000 * 15 + 64, len = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    len += (size_t)snprintf(text + len, cap - len, "redis_port = 1235\n");
    for (int i = 0; i < 3000; i++)
        len += (size_t)snprintf(text + len, cap - len, "# padding line\n");
    snprintf(text + len, cap - len, "port = 1234\n");
    char *path = temp_file(text);
    config cfg;
    char err[CONFIG_ERRLEN];
    config_init(&cfg);
    cr_assert_eq(config_load_file(&cfg, path, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.redis_port, 1235, "the first read's key");
    cr_assert_eq(cfg.port, 1234, "the last read's key");
    config_free(&cfg);
    unlink(path);
    free(path);
    free(text);
}

Test(config, load_reads_the_file_named_by_seckill_config)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *path = temp_file("worker_id = w7\n");
    setenv("SECKILL_CONFIG", path, 1);
    char *argv[] = {"seckill-test", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_OK, "%s", err);
    cr_assert_str_eq(cfg.worker_id, "w7");
    config_free(&cfg);
    unlink(path);
    free(path);
}

Test(config, load_flag_config_beats_seckill_config)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *env_path = temp_file("worker_id = from-env\n");
    char *flag_path = temp_file("worker_id = from-flag\n");
    setenv("SECKILL_CONFIG", env_path, 1);
    char opt[512];
    snprintf(opt, sizeof(opt), "--config=%s", flag_path);
    char *argv[] = {"seckill-test", opt, NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_OK, "%s", err);
    cr_assert_str_eq(cfg.worker_id, "from-flag");
    config_free(&cfg);
    unlink(env_path);
    unlink(flag_path);
    free(env_path);
    free(flag_path);
}

Test(config, load_flags_take_both_spellings_of_a_value)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {
        "seckill-test",          "--port=9100", "--redis-host", "r.local", "--allow-anonymous",
        "--worker-batch-size=7", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_OK, "%s", err);
    cr_assert_eq(cfg.port, 9100);
    cr_assert_str_eq(cfg.redis_host, "r.local");
    cr_assert_eq(cfg.allow_anonymous, 1, "a bare boolean flag means true");
    cr_assert_eq(cfg.worker_batch_size, 7);
    config_free(&cfg);
}

Test(config, load_boolean_flag_takes_an_explicit_value)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    setenv("SECKILL_ALLOW_ANONYMOUS", "true", 1);
    char *argv[] = {"seckill-test", "--allow-anonymous=false", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_OK, "%s", err);
    cr_assert_eq(cfg.allow_anonymous, 0);
    config_free(&cfg);
}

Test(config, load_help_answers_and_exits)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    char *argv[] = {"seckill-test", "--port", "1", "--help", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT);
    cr_assert(strstr(out, "Usage: seckill-test"), "%s", out);
    cr_assert(strstr(out, "--order-lock-ttl-ms"), "every key has its flag: %s", out);
    cr_assert_null(strstr(out, "  --lock-ttl-ms"), "a retired key is no option: %s", out);
    cr_assert(strstr(out, "--print-config"), "%s", out);
    cr_assert(strstr(out, "SECKILL_"), "help names the environment variables: %s", out);
    free(out);
    config_free(&cfg);
}

Test(config, load_version_answers_and_exits)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    char *argv[] = {"seckill-test", "--version", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT);
    cr_assert(strstr(out, SECKILL_VERSION), "%s", out);
    free(out);
    config_free(&cfg);
}

Test(config, load_print_config_masks_the_secrets)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    setenv("SECKILL_REDIS_PASSWORD", "redispw-123", 1);
    char *argv[] = {"seckill-test",
                    "--admin-token",
                    "admintok-456",
                    "--pg-conninfo",
                    "host=db user=s password=pgpw-789",
                    "--port",
                    "9200",
                    "--print-config",
                    NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT, "%s", err);
    cr_assert(strstr(out, "port = 9200\n"), "the effective values are printed: %s", out);
    cr_assert(strstr(out, "admin_token = ****\n"), "%s", out);
    cr_assert(strstr(out, "redis_password = ****\n"), "%s", out);
    cr_assert(strstr(out, "pg_conninfo = ****\n"), "%s", out);
    cr_assert_null(strstr(out, "admintok-456"), "%s", out);
    cr_assert_null(strstr(out, "redispw-123"), "%s", out);
    cr_assert_null(strstr(out, "pgpw-789"), "%s", out);
    free(out);
    config_free(&cfg);
}

Test(config, print_config_shows_empty_secrets_and_a_conninfo_without_password)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    char *argv[] = {"seckill-test", "--print-config", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT, "%s", err);
    cr_assert(strstr(out, "admin_token = \n"), "%s", out);
    cr_assert(strstr(out, "pg_conninfo = host=127.0.0.1 port=5432 dbname=seckill user=seckill\n"),
              "%s", out);
    cr_assert(strstr(out, "allow_anonymous = false\n"), "%s", out);
    free(out);
    config_free(&cfg);
}

Test(config, print_config_output_parses_back_to_the_same_config)
{
    config a, b;
    char err[CONFIG_ERRLEN] = "";
    char *text = NULL;
    size_t size = 0;
    config_init(&a);
    config_init(&b);
    cr_assert_eq(config_set(&a, "port", "9300", err, sizeof(err)), 0);
    cr_assert_eq(config_set(&a, "allow_anonymous", "on", err, sizeof(err)), 0);
    cr_assert_eq(config_set(&a, "worker_id", "w2", err, sizeof(err)), 0);
    cr_assert_eq(config_set(&a, "buyer_auth", "token", err, sizeof(err)), 0);
    cr_assert_eq(config_set(&a, "payment_timeout_s", "60", err, sizeof(err)), 0);
    FILE *out = open_memstream(&text, &size);
    config_print(&a, out);
    fclose(out);
    cr_assert_eq(config_parse_text(&b, text, "printed", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(b.port, 9300);
    cr_assert_eq(b.allow_anonymous, 1);
    cr_assert_str_eq(b.worker_id, "w2");
    cr_assert_eq(b.buyer_auth, CONFIG_BUYER_AUTH_TOKEN, "an enum key prints its word");
    cr_assert_eq(b.payment_timeout_s, 60);
    free(text);
    config_free(&a);
    config_free(&b);
}

Test(config, load_unknown_flag_is_an_error_naming_it)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", "--no-such-flag", "1", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "--no-such-flag"), "%s", err);
    config_free(&cfg);
}

Test(config, load_positional_argument_is_an_error)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", "serve", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "serve"), "%s", err);
    config_free(&cfg);
}

Test(config, load_flag_without_its_value_is_an_error)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", "--port", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "--port"), "%s", err);
    config_free(&cfg);
}

Test(config, load_bad_flag_value_names_the_key)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", "--redis-port", "70000", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "redis_port"), "%s", err);
    config_free(&cfg);
}

Test(config, load_bad_environment_value_names_the_variable)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    setenv("SECKILL_PORT", "eighty", 1);
    char *argv[] = {"seckill-test", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "SECKILL_PORT") && strstr(err, "eighty"), "%s", err);
    config_free(&cfg);
}

Test(config, load_missing_file_is_an_error_naming_it)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", "--config", "/nonexistent/seckill.conf", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "/nonexistent/seckill.conf"), "%s", err);
    config_free(&cfg);
}

Test(config, load_bad_file_line_reports_path_and_line)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *path = temp_file("port = 9000\nworker_batch_size = 0\n");
    char *argv[] = {"seckill-test", "--config", path, NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    char where[600];
    snprintf(where, sizeof(where), "%s:2", path);
    cr_assert(strstr(err, where) && strstr(err, "worker_batch_size"), "%s", err);
    config_free(&cfg);
    unlink(path);
    free(path);
}

Test(config, load_config_flag_without_a_file_is_an_error)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", "--config", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "--config"), "%s", err);
    config_free(&cfg);
}

Test(config, help_shows_the_default_conninfo_that_holds_no_password)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    char *argv[] = {"seckill-test", "--help", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT);
    cr_assert(strstr(out, "dbname=seckill"), "%s", out);
    free(out);
    config_free(&cfg);
}

/* 32 bytes: the shortest buyer_token_secret buyer_auth = token takes. */
#define SECRET_32 "0123456789abcdef0123456789abcdef"

Test(config, buyer_auth_takes_none_or_token_and_nothing_else)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "buyer_auth", "token", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.buyer_auth, CONFIG_BUYER_AUTH_TOKEN);
    cr_assert_eq(config_set(&cfg, "buyer_auth", "none", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.buyer_auth, CONFIG_BUYER_AUTH_NONE);
    cr_assert_eq(config_set(&cfg, "buyer_auth", "Token", err, sizeof(err)), 0, "any case");
    cr_assert_eq(cfg.buyer_auth, CONFIG_BUYER_AUTH_TOKEN);
    const char *bad[] = {"", "jwt", "tokens", "1", " token"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        cr_assert_eq(config_set(&cfg, "buyer_auth", bad[i], err, sizeof(err)), -1, "'%s'", bad[i]);
        cr_assert(strstr(err, "buyer_auth") && strstr(err, "none or token"), "%s", err);
    }
    cr_assert_eq(cfg.buyer_auth, CONFIG_BUYER_AUTH_TOKEN, "a refused value leaves the old one");
    config_free(&cfg);
}

Test(config, webhook_priority_is_normal_by_default_and_takes_idle)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(cfg.webhook_priority, CONFIG_WEBHOOK_PRIORITY_NORMAL);
    cr_assert_eq(config_set(&cfg, "webhook_priority", "idle", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.webhook_priority, CONFIG_WEBHOOK_PRIORITY_IDLE);
    cr_assert_eq(config_set(&cfg, "webhook_priority", "low", err, sizeof(err)), -1);
    cr_assert(strstr(err, "webhook_priority") && strstr(err, "normal or idle"), "%s", err);
    cr_assert_eq(cfg.webhook_priority, CONFIG_WEBHOOK_PRIORITY_IDLE, "a refused value leaves it");
    config_free(&cfg);
}

Test(config, redis_cluster_takes_a_list_of_seeds_and_names_a_bad_entry)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(
        config_set(&cfg, "redis_cluster", "127.0.0.1:7000, 127.0.0.1:7001", err, sizeof(err)), 0,
        "%s", err);
    cr_assert_str_eq(cfg.redis_cluster, "127.0.0.1:7000, 127.0.0.1:7001");
    cr_assert_eq(config_set(&cfg, "redis_cluster", "127.0.0.1:7000,localhost", err, sizeof(err)),
                 -1);
    cr_assert_str_eq(err, "redis_cluster: entry 2 'localhost': expected host:port");
    cr_assert_eq(config_set(&cfg, "redis_cluster", "h:99999", err, sizeof(err)), -1);
    cr_assert(strstr(err, "redis_cluster") && strstr(err, "1..65535"), "%s", err);
    cr_assert_str_eq(cfg.redis_cluster, "127.0.0.1:7000, 127.0.0.1:7001",
                     "a refused value leaves the old one");
    cr_assert_eq(config_set(&cfg, "redis_cluster", "", err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(cfg.redis_cluster, "");
    config_free(&cfg);
}

Test(config, load_refuses_a_bad_redis_cluster_from_the_environment)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    char *argv[] = {"seckill-worker", NULL};
    char *printed = NULL;
    config_init(&cfg);
    setenv("SECKILL_REDIS_CLUSTER", "127.0.0.1:7000,,127.0.0.1:7001", 1);
    cr_assert_eq(load(&cfg, argv, &printed, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "SECKILL_REDIS_CLUSTER") && strstr(err, "entry 2 is empty"), "%s", err);
    free(printed);
    config_free(&cfg);
}

Test(config, reserve_wait_replicas_is_auto_by_default_and_takes_a_count)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(cfg.reserve_wait_replicas, CONFIG_WAIT_AUTO, "a replica is waited for by default");
    cr_assert_eq(config_set(&cfg, "reserve_wait_replicas", "0", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.reserve_wait_replicas, 0, "the documented opt-out");
    cr_assert_eq(config_set(&cfg, "reserve_wait_replicas", "AUTO", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.reserve_wait_replicas, CONFIG_WAIT_AUTO);
    cr_assert_eq(config_set(&cfg, "reserve_wait_replicas", "2", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.reserve_wait_replicas, 2);
    cr_assert_eq(config_set(&cfg, "reserve_wait_replicas", "-1", err, sizeof(err)), -1,
                 "auto is said by its name, not by a number");
    cr_assert_eq(config_set(&cfg, "reserve_wait_replicas", "some", err, sizeof(err)), -1);
    cr_assert(strstr(err, "an integer or auto"), "%s", err);
    cr_assert_eq(config_set(&cfg, "reserve_wait_replicas", "auto", err, sizeof(err)), 0, "%s", err);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    config_print(&cfg, out);
    fclose(out);
    cr_assert(strstr(text, "reserve_wait_replicas = auto\n"), "%s", text);
    free(text);
    config_free(&cfg);
}

Test(config, payment_timeout_takes_0_to_a_week)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "payment_timeout_s", "0", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.payment_timeout_s, 0);
    cr_assert_eq(config_set(&cfg, "payment_timeout_s", "604800", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.payment_timeout_s, 604800);
    cr_assert_eq(config_set(&cfg, "payment_timeout_s", "604801", err, sizeof(err)), -1);
    cr_assert(strstr(err, "payment_timeout_s") && strstr(err, "604800"), "%s", err);
    cr_assert_eq(config_set(&cfg, "payment_timeout_s", "-1", err, sizeof(err)), -1);
    cr_assert_eq(cfg.payment_timeout_s, 604800);
    config_free(&cfg);
}

Test(config, check_wants_a_secret_of_32_bytes_only_for_token_auth)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(config_check(&cfg, err, sizeof(err)), 0, "the defaults pass: %s", err);
    cr_assert_eq(config_set(&cfg, "buyer_token_secret", "short", err, sizeof(err)), 0);
    cr_assert_eq(config_check(&cfg, err, sizeof(err)), 0, "a short secret unused is no harm");
    cr_assert_eq(config_set(&cfg, "buyer_auth", "token", err, sizeof(err)), 0);
    cr_assert_eq(config_check(&cfg, err, sizeof(err)), -1);
    cr_assert(strstr(err, "buyer_token_secret") && strstr(err, "32"), "%s", err);
    cr_assert(strstr(err, "has 5"), "says how short it is: %s", err);
    cr_assert_null(strstr(err, "short"), "the secret itself is not shown: %s", err);
    cr_assert_eq(config_set(&cfg, "buyer_token_secret", "", err, sizeof(err)), 0);
    cr_assert_eq(config_check(&cfg, err, sizeof(err)), -1);
    cr_assert(strstr(err, "buyer_token_secret"), "%s", err);
    cr_assert_eq(config_set(&cfg, "buyer_token_secret", SECRET_32 + 1, err, sizeof(err)), 0);
    cr_assert_eq(config_check(&cfg, err, sizeof(err)), -1, "31 bytes are too few");
    cr_assert_eq(config_set(&cfg, "buyer_token_secret", SECRET_32, err, sizeof(err)), 0);
    cr_assert_eq(config_check(&cfg, err, sizeof(err)), 0, "%s", err);
    config_free(&cfg);
}

Test(config, load_refuses_token_auth_without_its_secret)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", "--buyer-auth", "token", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "buyer_token_secret") && strstr(err, "at least 32 bytes"), "%s", err);
    config_free(&cfg);

    /* --print-config too: a config that cannot start is not shown as if it could. */
    char *print[] = {"seckill-test", "--buyer-auth=token", "--buyer-token-secret",
                     "too-short",    "--print-config",     NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, print, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "buyer_token_secret"), "%s", err);
    cr_assert_null(strstr(err, "too-short"), "%s", err);
    config_free(&cfg);
}

Test(config, load_takes_the_buyer_token_secret_from_the_environment_and_masks_it)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    char *path = temp_file("buyer_auth = token\npayment_timeout_s = 0\n");
    setenv("SECKILL_BUYER_TOKEN_SECRET", SECRET_32, 1);
    char *argv[] = {"seckill-test", "--config", path, "--print-config", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT, "%s", err);
    cr_assert_eq(cfg.buyer_auth, CONFIG_BUYER_AUTH_TOKEN);
    cr_assert_str_eq(cfg.buyer_token_secret, SECRET_32);
    cr_assert_eq(cfg.payment_timeout_s, 0);
    cr_assert(strstr(out, "buyer_auth = token\n"), "%s", out);
    cr_assert(strstr(out, "buyer_token_secret = ****\n"), "%s", out);
    cr_assert(strstr(out, "payment_timeout_s = 0\n"), "%s", out);
    cr_assert_null(strstr(out, SECRET_32), "the secret was printed: %s", out);
    free(out);
    config_free(&cfg);
    unlink(path);
    free(path);
}

Test(config, help_lists_the_buyer_keys)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    char *argv[] = {"seckill-test", "--help", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT);
    cr_assert(strstr(out, "--buyer-auth") && strstr(out, "(default: none)"), "%s", out);
    cr_assert(strstr(out, "--buyer-token-secret"), "%s", out);
    cr_assert(strstr(out, "--payment-timeout-s") && strstr(out, "(default: 900)"), "%s", out);
    free(out);
    config_free(&cfg);
}

Test(config, the_scoped_credentials_come_from_the_environment_and_print_masked)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    setenv("SECKILL_ADMIN_TOKENS", "admin-tok-0123456789,admin-tok-9876543210", 1);
    setenv("SECKILL_PAYMENTS_TOKENS", "payments-tok-01234567", 1);
    setenv("SECKILL_ORDERS_READ_TOKENS", "reader-tok-0123456789", 1);
    setenv("SECKILL_CORS_ORIGINS", "https://shop.example", 1);
    char *argv[] = {"seckill-test", "--print-config", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, &out, err, sizeof(err)), CONFIG_EXIT, "%s", err);
    cr_assert_str_eq(cfg.payments_tokens, "payments-tok-01234567");
    cr_assert(strstr(out, "admin_tokens = ****\n"), "%s", out);
    cr_assert(strstr(out, "payments_tokens = ****\n"), "%s", out);
    cr_assert(strstr(out, "orders_read_tokens = ****\n"), "%s", out);
    cr_assert(strstr(out, "cors_origins = https://shop.example\n"), "not a secret: %s", out);
    cr_assert_null(strstr(out, "-tok-"), "no token is printed: %s", out);
    free(out);
    config_free(&cfg);
}

Test(config, a_bad_token_list_or_origin_stops_the_load_without_showing_a_token)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *argv[] = {"seckill-test", NULL};
    setenv("SECKILL_PAYMENTS_TOKENS", "payments-tok-01234567,short-secret", 1);
    config_init(&cfg);
    cr_assert_eq(load(&cfg, argv, NULL, err, sizeof(err)), CONFIG_ERROR);
    cr_assert(strstr(err, "SECKILL_PAYMENTS_TOKENS") && strstr(err, "token 2"), "%s", err);
    cr_assert_null(strstr(err, "short-secret"), "%s", err);
    config_free(&cfg);
    unsetenv("SECKILL_PAYMENTS_TOKENS");

    config_init(&cfg);
    cr_assert_eq(config_set(&cfg, "cors_origins", "https://shop.example/", err, sizeof(err)), -1);
    cr_assert(strstr(err, "cors_origins") && strstr(err, "no path"), "%s", err);
    cr_assert_eq(config_set(&cfg, "cors_origins", "https://a.example,http://b.example:8080", err,
                            sizeof(err)),
                 0, "%s", err);
    config_free(&cfg);
}

Test(config, lab_is_off_by_default_and_takes_on_off_true_false)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    cr_assert_eq(cfg.lab, 0, "the laboratory is off unless asked for");
    const struct {
        const char *text;
        int lab;
    } values[] = {{"on", 1}, {"off", 0}, {"true", 1}, {"false", 0}, {"ON", 1}, {"Off", 0}};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        cr_assert_eq(config_set(&cfg, "lab", values[i].text, err, sizeof(err)), 0, "%s", err);
        cr_assert_eq(cfg.lab, values[i].lab, "lab = %s", values[i].text);
    }
    cr_assert_eq(config_set(&cfg, "lab", "maybe", err, sizeof(err)), -1);
    cr_assert(strstr(err, "lab") && strstr(err, "maybe"), "%s", err);
    config_free(&cfg);
}

Test(config, help_and_print_config_show_the_lab_switch_off)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    char *out;
    char *help[] = {"seckill-server", "--help", NULL};
    config_init(&cfg);
    cr_assert_eq(load(&cfg, help, &out, err, sizeof(err)), CONFIG_EXIT);
    cr_assert(strstr(out, "--lab ") && strstr(out, "(default: off)"), "%s", out);
    free(out);
    char *print[] = {"seckill-server", "--print-config", NULL};
    cr_assert_eq(load(&cfg, print, &out, err, sizeof(err)), CONFIG_EXIT);
    cr_assert(strstr(out, "\nlab = off\n"), "%s", out);
    free(out);
    char *on[] = {"seckill-server", "--lab", "on", "--print-config", NULL};
    cr_assert_eq(load(&cfg, on, &out, err, sizeof(err)), CONFIG_EXIT);
    cr_assert(strstr(out, "\nlab = on\n"), "%s", out);
    free(out);
    config_free(&cfg);
}
