"""The SLURM family's wing: what both SLURM kinds share (slurm/ over SSH, slurm_rest/ through slurmrestd).

- batch.py: BatchKind, the Kind both SLURM kinds subclass: batch-script templates, their preview, the terminal and
  JupyterLab of a running job, the launch form's file check;
- states.py: SLURM's job states and reasons; accounting.py: what sacct recorded; arrays.py: job arrays (sweeps);
  hostlist.py: host lists as SLURM prints them;
- reservations.py: lab sessions held as SLURM reservations (the kinds' lab-session holder);
- sudo_rule.py: the sudo rule that lets the service account run jobs as each student, judged;
  runner_check.py: Test connection's word on who runs students' code;
- srun.py: the `srun` shell in a running job; notebook.py: where a job's JupyterLab listens;
  lab_files.py: the launch form's look at a user's lab files as the job's identity.

The kinds' transports stand beside the wing and read it; the wing reads the shared hall below it (base.py, kind.py,
ssh.py, as_student.py, terminal.py) and never a kind. Nothing outside the clusters app imports it: the rest of the
portal asks a kind through the registry (clusters/kinds.py).
"""
