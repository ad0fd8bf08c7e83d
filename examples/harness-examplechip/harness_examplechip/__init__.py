"""harness vendor plugin for 'examplechip': the template a hardware vendor copies.

The "chip" is honestly this machine's CPU: one examplechip device per usable core, each
training process driving one of them with one thread. Everything a real accelerator's
package declares is here, with its real-chip counterpart in the comments: discovery, the
device backend the built-in frameworks run on, per-case configs, a peak-FLOPs table and a
measurement of its own around the training processes.
"""
