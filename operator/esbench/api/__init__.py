"""What every role shares: the custom resources (models), their admission rules evaluated
locally (validation), and the race report the runner hands to whoever started it."""
