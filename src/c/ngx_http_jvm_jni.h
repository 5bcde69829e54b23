
/*
 * nginx-jvm: the JNI state the JVM's own files share.  Only
 * ngx_http_jvm_vm_create.c (the worker's JVM created),
 * ngx_http_jvm_vm.c (every call down into Java),
 * ngx_http_jvm_natives.c (the natives Java calls up) and
 * ngx_http_jvm_child.c (the master's JVMs) include it, and with it jni.h:
 * the feature files are plain C and reach the JVM through module.h.
 */


#ifndef _NGX_HTTP_JVM_JNI_H_INCLUDED_
#define _NGX_HTTP_JVM_JNI_H_INCLUDED_


#include "ngx_http_jvm_module.h"

#include <jni.h>


typedef jint (JNICALL *ngx_http_jvm_create_pt)(JavaVM **vm, void **env,
    void *args);


/* ngx_http_jvm_vm_create.c: the JVM's options, for the master's JVMs too */
ngx_int_t ngx_http_jvm_vm_args(ngx_cycle_t *cycle,
    ngx_http_jvm_main_conf_t *jmcf, ngx_array_t *classpath, char **extra,
    void *exit_hook, JavaVMInitArgs *args, ngx_http_jvm_create_pt *createp);
void ngx_http_jvm_vm_remove_attach_socket(ngx_pid_t pid);

/* ngx_http_jvm_vm.c: the event loop's JNIEnv, the calls' common steps */
extern JNIEnv    *ngx_http_jvm_env;
extern ngx_fd_t   ngx_http_jvm_notify_fd;   /* what JVM threads wake */

ngx_int_t ngx_http_jvm_vm_bind(ngx_cycle_t *cycle);
ngx_int_t ngx_http_jvm_vm_failed(ngx_log_t *log, const char *what);

/* ngx_http_jvm_natives.c */
ngx_int_t ngx_http_jvm_natives_shm(ngx_cycle_t *cycle);


#endif /* _NGX_HTTP_JVM_JNI_H_INCLUDED_ */
