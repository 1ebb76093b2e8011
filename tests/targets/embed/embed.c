/* SPDX-License-Identifier: MIT */
/*
 * pyprofd test target: a C program that embeds CPython through the shared
 * libpython3.X.so.1.0 of the test rootfs.
 *
 * Unlike Debian's /usr/bin/python3.X (which links libpython statically), the
 * live runtime here is in the mapped libpython, and the executable's name
 * (embedder-3.X) says nothing about Python: discovery must find the runtime
 * through the library. Built by build.sh next to this file; runs inside the
 * rootfs as /pyprofd-targets/embedder-3.X.
 *
 * Default mode: initialise Python (PyConfig), then run SOURCE below as the
 * __main__ module, compiled with the file name "<embedded>". Stack of the
 * main thread (innermost last), always on CPU:
 *
 *     <module>  ->  embedded_work()
 *
 * embedded_work() walks its own stack with sys._getframe() and prints one
 * line "pyprofd-expected: {...}" (same format as the Python targets, plus
 * "libpython": the mapped library's path, or null where the chroot has no
 * /proc), then "pyprofd-target: ready",
 * then spins on one line until SIGTERM/SIGINT or until --duration SECONDS.
 *
 * --before-init: print "pyprofd-expected: {"initialized": false, ...}" and
 * "pyprofd-target: ready" without ever initialising Python, then wait for
 * SIGTERM/SIGINT: libpython (and its .PyRuntime) is mapped, but the runtime
 * is not initialised.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char SOURCE[] =
    "import argparse, gc, json, os, platform, signal, sys, threading\n"
    "\n"
    "done = False\n"
    "\n"
    "def frame_record(frame, leaf_line=None):\n"
    "    code = frame.f_code\n"
    "    if leaf_line is not None:\n"
    "        return {'function': getattr(code, 'co_qualname', code.co_name), 'file': "
    "code.co_filename,\n"
    "                'line': leaf_line, 'end_line': None, 'column': None, 'end_column': None}\n"
    "    positions = (list(code.co_positions())[frame.f_lasti // 2]\n"
    "                 if hasattr(code, 'co_positions') else (frame.f_lineno, None, None, None))\n"
    "    return {'function': getattr(code, 'co_qualname', code.co_name), 'file': "
    "code.co_filename,\n"
    "            'line': frame.f_lineno, 'end_line': positions[1],\n"
    "            'column': positions[2], 'end_column': positions[3]}\n"
    "\n"
    "def mapped_libpython():\n"
    "    # None where /proc is not mounted (a plain chroot)\n"
    "    try:\n"
    "        with open('/proc/self/maps') as maps:\n"
    "            for line in maps:\n"
    "                fields = line.split()\n"
    "                if len(fields) >= 6 and '/libpython' in fields[5]:\n"
    "                    return fields[5]\n"
    "    except OSError:\n"
    "        pass\n"
    "    return None\n"
    "\n"
    "def announce(leaf, leaf_line):\n"
    "    frames = [frame_record(leaf, leaf_line)]\n"
    "    frame = leaf.f_back\n"
    "    while frame is not None:\n"
    "        frames.append(frame_record(frame))\n"
    "        frame = frame.f_back\n"
    "    expected = {'python': platform.python_version(), 'pid': os.getpid(),\n"
    "                'thread_id': threading.get_native_id(), 'frames': frames,\n"
    "                'initialized': True, 'libpython': mapped_libpython()}\n"
    "    print('pyprofd-expected: ' + json.dumps(expected), flush=True)\n"
    "    print('pyprofd-target: ready', flush=True)\n"
    "\n"
    "def embedded_work():\n"
    "    me = sys._getframe()\n"
    "    announce(me, me.f_lineno + 1)  # the next line is the leaf's line\n"
    "    while not done: pass\n"
    "\n"
    "def _exit_cleanly(signum, frame):\n"
    "    sys.exit(0)\n"
    "\n"
    "parser = argparse.ArgumentParser(prog='embedder')\n"
    "parser.add_argument('--duration', type=float, default=None)\n"
    "args = parser.parse_args(sys.argv[1:])\n"
    "signal.signal(signal.SIGTERM, _exit_cleanly)\n"
    "signal.signal(signal.SIGINT, _exit_cleanly)\n"
    "if args.duration is not None:\n"
    "    signal.signal(signal.SIGALRM, _exit_cleanly)\n"
    "    signal.setitimer(signal.ITIMER_REAL, args.duration)\n"
    "gc.collect()\n"
    "gc.disable()\n"
    "embedded_work()\n";

static void exit_cleanly(int signum)
{
    (void)signum;
    _exit(0);
}

/* Never initialises Python; waits for SIGTERM/SIGINT (also as PID 1). */
static int before_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = exit_cleanly;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) {
        perror("embedder: sigaction");
        return 1;
    }
    printf("pyprofd-expected: {\"initialized\": false, \"pid\": %ld, \"py_version\": \"%s\"}\n",
           (long)getpid(), PY_VERSION);
    printf("pyprofd-target: ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--before-init") == 0)
        return before_init();

    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.parse_argv = 0; /* sys.argv = argv, as is: SOURCE parses it */
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, argv[0]);
    if (!PyStatus_Exception(status))
        status = PyConfig_SetBytesArgv(&config, argc, argv);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status))
        Py_ExitStatusException(status);

    PyObject *code = Py_CompileString(SOURCE, "<embedded>", Py_file_input);
    PyObject *module = code ? PyImport_AddModule("__main__") : NULL; /* borrowed */
    PyObject *result =
        module ? PyEval_EvalCode(code, PyModule_GetDict(module), PyModule_GetDict(module)) : NULL;
    if (result == NULL)
        PyErr_Print(); /* exits with the code of a SystemExit (our SIGTERM) */
    Py_XDECREF(result);
    Py_XDECREF(code);
    if (Py_FinalizeEx() < 0)
        return 120;
    return result == NULL;
}
