//! Local placeholder (untracked): the real module is being added on main.
